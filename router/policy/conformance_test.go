package policy

import (
	"fmt"
	"sync"
	"testing"
)

// TestConformance runs the Policy contract against every registered policy.
func TestConformance(t *testing.T) {
	t.Parallel()
	params := Params{CacheThreshold: 0.3, BalanceAbsThreshold: 4, BalanceRelThreshold: 1.5, MaxTreeSize: 1 << 20}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := New(name, params, NewLockedRand(1))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != name {
				t.Errorf("Name() = %q, want %q", p.Name(), name)
			}

			t.Run("empty pool", func(t *testing.T) {
				if _, ok := p.Pick(Request{Text: "x"}, nil); ok {
					t.Error("Pick on no candidates returned ok")
				}
			})
			t.Run("single candidate", func(t *testing.T) {
				for i := range 10 {
					d, ok := p.Pick(Request{Text: fmt.Sprint(i), HashKey: fmt.Sprint(i)}, []Candidate{{ID: "only", InFlight: int64(i)}})
					if !ok || d.Index != 0 {
						t.Fatalf("Pick = %+v, %v; want index 0", d, ok)
					}
				}
			})
			t.Run("in range, only given candidates", func(t *testing.T) {
				// The router passes only healthy candidates; a policy must
				// never answer outside them, whatever loads they carry.
				cands := []Candidate{{ID: "a", InFlight: 3}, {ID: "b", InFlight: 0, Queue: 9}, {ID: "c", InFlight: 7}}
				for i := range 200 {
					d, ok := p.Pick(Request{Model: "m", Text: fmt.Sprintf("prompt %d", i%7), HashKey: fmt.Sprint(i)}, cands)
					if !ok || d.Index < 0 || d.Index >= len(cands) {
						t.Fatalf("Pick = %+v, %v", d, ok)
					}
				}
			})
			t.Run("deterministic under a seeded source", func(t *testing.T) {
				run := func() []int {
					q, _ := New(name, params, NewLockedRand(42))
					var picks []int
					for i := range 300 {
						cands := []Candidate{{ID: "a", InFlight: int64(i % 3)}, {ID: "b", InFlight: int64(i % 5)}, {ID: "c", InFlight: int64(i % 2)}, {ID: "d"}}
						d, _ := q.Pick(Request{Model: "m", Text: fmt.Sprintf("group %d body %d", i%4, i), HashKey: fmt.Sprint(i % 17)}, cands[:1+i%4])
						picks = append(picks, d.Index)
					}
					return picks
				}
				a, b := run(), run()
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("pick %d differs between identical runs: %d vs %d", i, a[i], b[i])
					}
				}
			})
			t.Run("reads only the fields it declares", func(t *testing.T) {
				// The router leaves undeclared fields empty; picks must not
				// change when they are.
				var needs Needs
				if n, ok := p.(Needer); ok {
					needs = n.Needs()
				}
				run := func(blank bool) []int {
					q, _ := New(name, params, NewLockedRand(9))
					var picks []int
					for i := range 200 {
						req := Request{Model: "m", Text: fmt.Sprintf("group %d body %d", i%5, i), HashKey: fmt.Sprint(i % 13)}
						if blank && !needs.Text {
							req.Model, req.Text = "", ""
						}
						if blank && !needs.HashKey {
							req.HashKey = ""
						}
						cands := []Candidate{{ID: "a", InFlight: int64(i % 3)}, {ID: "b", InFlight: int64(i % 2)}, {ID: "c"}}
						d, _ := q.Pick(req, cands)
						picks = append(picks, d.Index)
					}
					return picks
				}
				if full, blank := run(false), run(true); fmt.Sprint(full) != fmt.Sprint(blank) {
					t.Errorf("picks depend on a field the policy does not declare (needs %+v)", needs)
				}
			})
			t.Run("concurrent use", func(t *testing.T) {
				cands := []Candidate{{ID: "a"}, {ID: "b"}, {ID: "c"}}
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 100 {
							if _, ok := p.Pick(Request{Model: "m", Text: fmt.Sprint(g, i), HashKey: fmt.Sprint(i)}, cands); !ok {
								t.Error("Pick failed")
							}
						}
					})
				}
				wg.Wait()
			})
		})
	}
}

func TestNewUnknownPolicy(t *testing.T) {
	t.Parallel()
	if _, err := New("fastest", Params{}, nil); err == nil {
		t.Fatal("New accepted an unknown policy")
	}
}
