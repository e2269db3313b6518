package cmd

import (
	"fmt"
	"io"

	"github.com/autoinfer/autoinfer/ledger"
)

// printRoutes writes each side's route-receipt figures: misroute rate on
// its basis, and predicted against served prefix-cache hit rate.
func printRoutes(w io.Writer, r *ledger.RouteComparison) {
	if r == nil {
		return
	}
	for _, s := range []struct {
		name string
		f    ledger.RouteFigures
	}{{"A", r.A}, {"B", r.B}} {
		if s.f.Receipts == 0 {
			fmt.Fprintf(w, "route receipts %s: none\n", s.name)
			continue
		}
		fmt.Fprintf(w, "route receipts %s: %d", s.name, s.f.Receipts)
		if s.f.MisrouteRate != nil {
			fmt.Fprintf(w, ", misrouted %d of %d judged (%.1f %%, by %s tokens)", s.f.Misrouted, s.f.Judged, 100**s.f.MisrouteRate, s.f.Basis)
		} else {
			fmt.Fprintf(w, ", no misroute rate (no candidate figures by %s tokens)", s.f.Basis)
		}
		if s.f.PredictedHitRate != nil {
			fmt.Fprintf(w, ", hit rate predicted %.1f %% / served %.1f %%, exact %.1f %%", 100**s.f.PredictedHitRate, 100**s.f.ServedHitRate, 100**s.f.Exact)
		}
		fmt.Fprintln(w)
	}
}
