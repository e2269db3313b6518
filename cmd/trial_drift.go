package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/simtarget"
)

// attachDrift gives every real-time result on real servers that recorded
// a prediction (its own virtual replay) the drift of the profile that
// predicted it:
// that profile's prediction error over every row of the ledger it
// predicted, and the metrics whose recent median exceeds the error the
// profile states (ledger.Drifts, as `ledger compare --predicted` shows
// it). A ledger that cannot be read for it leaves the results without
// drift and says why on stderr: the trials ran and are recorded.
func attachDrift(ctx context.Context, stderr io.Writer, led *ledger.Ledger, rs []trialResult) {
	if !slices.ContainsFunc(rs, func(r trialResult) bool { return r.ReplayRow > 0 && r.RowID > 0 }) {
		return
	}
	ps, err := led.Predictions(ctx, ledger.Filter{IncludeStale: true})
	if err != nil {
		fmt.Fprintf(stderr, "warning: no drift check: reading the ledger's predictions: %v\n", err)
		return
	}
	// A sim target's replay is its own profile run again: what it misses
	// is the host's load, which HostOverloaded judges, not a model that
	// drifted from a server.
	ps = slices.DeleteFunc(ps, func(p ledger.Prediction) bool { return p.Measured.TargetKind == simtarget.Kind })
	drifts := ledger.Drifts(ps)
	for i := range rs {
		if rs[i].ReplayRow == 0 || rs[i].RowID == 0 {
			continue
		}
		for j := range drifts {
			if slices.Contains(drifts[j].Rows, rs[i].RowID) {
				rs[i].Drift = &drifts[j]
				break
			}
		}
	}
}

// printTrialDrift says, once per profile that predicted a result, whether
// its recent predictions drifted beyond its stated error, naming each
// metric that did.
func printTrialDrift(w io.Writer, rs []trialResult) {
	var ds []ledger.Drift
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Drift == nil || seen[r.Drift.Profile] {
			continue
		}
		seen[r.Drift.Profile] = true
		ds = append(ds, *r.Drift)
	}
	printDrift(w, ds)
}
