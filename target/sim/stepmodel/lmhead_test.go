package stepmodel

import "testing"

// TestLMHeadTableIsTheFormula: the table StepMs reads holds exactly what
// LMHeadMs computes, and sizes past it fall back to the formula.
func TestLMHeadTableIsTheFormula(t *testing.T) {
	m, err := NewModel(archs["llama3-8b"], gpus[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{0, 1, 7, 64, 256, lmHeadSeqs, lmHeadSeqs + 1, 4096} {
		if got, want := m.lmHeadMs(s), m.eff.LMHeadMs(m.Arch, m.GPU, m.TP, s); got != want {
			t.Errorf("lmHeadMs(%d) = %v, LMHeadMs gives %v", s, got, want)
		}
	}
}
