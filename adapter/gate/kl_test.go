package gate

import (
	"math"
	"testing"
)

func TestKLTopK(t *testing.T) {
	p := position{"a": math.Log(0.7), "b": math.Log(0.2), "c": math.Log(0.1)}
	tests := []struct {
		name string
		q    position
		want float64
	}{
		{"identical", p, 0},
		// Hand-computed: P=(.7,.2,.1), Q=(.5,.3,.2) → Σ p ln(p/q).
		{"shifted", position{"a": math.Log(0.5), "b": math.Log(0.3), "c": math.Log(0.2)},
			0.7*math.Log(0.7/0.5) + 0.2*math.Log(0.2/0.3) + 0.1*math.Log(0.1/0.2)},
		// Union {a,b,c,d}. P lacks d: half its floor, .05 → P=(.7,.2,.1,.05)/1.05.
		// Q lacks c: half its floor, .1 → Q=(.6,.2,.1,.2)/1.1.
		{"union with halved floors", position{"a": math.Log(0.6), "b": math.Log(0.2), "d": math.Log(0.2)},
			klRef([]float64{.7, .2, .1, .05}, []float64{.6, .2, .1, .2})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := klTopK(p, tt.q); math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("klTopK = %.15f, want %.15f", got, tt.want)
			}
		})
	}
}

// klRef is the textbook KL of two unnormalised vectors after normalising.
func klRef(p, q []float64) float64 {
	var sp, sq float64
	for i := range p {
		sp += p[i]
		sq += q[i]
	}
	kl := 0.0
	for i := range p {
		kl += p[i] / sp * math.Log((p[i]/sp)/(q[i]/sq))
	}
	return kl
}

func TestPromptKLAveragesSharedPositions(t *testing.T) {
	same := position{"x": 0}
	other := position{"y": 0}
	ref := []position{same, same, same}
	cand := []position{same, other} // second position disjoint, third missing
	got := promptKL(ref, cand)
	if got <= 0 || math.IsInf(got, 0) || math.IsNaN(got) {
		t.Fatalf("promptKL = %v, want a positive finite mean over 2 positions", got)
	}
	if promptKL(ref, ref) != 0 {
		t.Fatal("identical answers must have KL 0")
	}
}
