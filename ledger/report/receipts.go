package report

import (
	"fmt"
	"strings"

	"github.com/autoinfer/autoinfer/ledger"
)

// RouteRow is one selected row's route-receipt figures (ledger.RouteFigures):
// its misroute rate and its predicted against served prefix-cache hit rate.
type RouteRow struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	ledger.RouteFigures
}

// routeRowOf is t's route figures from its request records; false when
// none of them carries a receipt.
func routeRowOf(t ledger.Trial, reqs []ledger.Request) (RouteRow, bool, error) {
	f, err := ledger.RouteFiguresOf(reqs)
	if err != nil {
		return RouteRow{}, false, fmt.Errorf("trial %d: %w", t.ID, err)
	}
	return RouteRow{ID: t.ID, Name: t.Name, RouteFigures: f}, f.Receipts > 0, nil
}

// pct formats a share as a percentage, "n/a" when unknown.
func pct(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %%", 100**v)
}

// latencyIntervals are the comparison's latency intervals, which the
// page's bootstrap chart draws in milliseconds (B faster or slower); the
// misroute_rate interval, a share, is left to the Route receipts section.
func latencyIntervals(ivs []ledger.Interval) []ledger.Interval {
	out := []ledger.Interval{}
	for _, iv := range ivs {
		if strings.HasSuffix(iv.Metric, "_ms") {
			out = append(out, iv)
		}
	}
	return out
}
