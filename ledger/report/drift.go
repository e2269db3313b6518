package report

import (
	"fmt"
	"html/template"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// driftFuncs format the drift section (assets/drift.html.tmpl): an error
// as a percentage ("–" where the pair has no ratio), the stated bound,
// and whether a metric drifted.
func driftFuncs() template.FuncMap {
	return template.FuncMap{
		"errpct": func(errs map[string]float64, m string) string {
			v, ok := errs[m]
			if !ok {
				return "–"
			}
			return fmt.Sprintf("%.1f %%", 100*v)
		},
		"bound":    func(d ledger.Drift, m string) string { return fmt.Sprintf("%.1f %%", 100*d.Bound(m)) },
		"exceeded": func(d ledger.Drift, m string) bool { return slices.Contains(d.Exceeded, m) },
		"utc":      func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	}
}
