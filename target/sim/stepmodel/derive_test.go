package stepmodel

import (
	"maps"
	"slices"
	"testing"
)

// Acceptance 2 of issue 12: fit the architecture-derived linear-layer model
// without one measured (GPU, model) pair, on the other models' tables of
// that GPU, and predict the left-out pair's measured rows (all its TP
// degrees) within 15 % mean. One pair per measured GPU; the generator reports
// every pair (derivedErrors, docs/sim.md).
func TestDerivedLinearLayersPredictHeldOutPair(t *testing.T) {
	t.Parallel()
	rows := heldOutRows(t)
	for _, left := range []PairKey{{"h100", "codellama-34b", 0}, {"a100", "llama3-8b", 0}} {
		t.Run(left.GPU+"-"+left.Model, func(t *testing.T) {
			t.Parallel()
			g, err := LookupGPU(left.GPU)
			if err != nil {
				t.Fatal(err)
			}
			var samples []LinearSample
			for _, k := range slices.SortedFunc(maps.Keys(linearTables), comparePairs) {
				if k.GPU != left.GPU || k.Model == left.Model {
					continue
				}
				// Every third knot: the fit is as good and three times faster.
				tab := linearTables[k]
				for i := 0; i < len(tab.X); i += 3 {
					samples = append(samples, LinearSample{Arch: archs[k.Model], TP: k.TP, T: tab.X[i], Ms: tab.Y[i]})
				}
			}
			e, err := FitEfficiency(g, samples)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Validate(); err != nil {
				t.Fatalf("fitted efficiencies: %v", err)
			}
			sum, n := 0.0, 0
			for k, pts := range rows {
				if k.GPU != left.GPU || k.Model != left.Model {
					continue
				}
				err := meanAbsErr(pts, func(x float64) float64 { return e.LayerMs(archs[k.Model], g, k.TP, x) })
				t.Logf("%v: %.1f %% mean error on %d measured rows", k, 100*err, len(pts))
				sum += err * float64(len(pts))
				n += len(pts)
			}
			if n == 0 {
				t.Fatal("no measured rows for the left-out pair")
			}
			if mean := sum / float64(n); mean > 0.15 {
				t.Errorf("derived model misses the left-out pair by %.1f %% on average, want <= 15 %%", 100*mean)
			}
		})
	}
}
