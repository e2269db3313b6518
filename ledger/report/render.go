package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"regexp"

	"github.com/autoinfer/autoinfer/ledger"
)

//go:embed assets/report.html.tmpl assets/drift.html.tmpl assets/report.css assets/report.js
//go:embed assets/vendor/chart.umd.min.js assets/vendor/chartjs-plugin-datalabels.min.js
var assets embed.FS

// page is what the template fills in; the scripts and the data go in
// verbatim (they are trusted, checked in Render).
type page struct {
	Title string
	// Routes are drawn by the template itself (receipts.go).
	Routes     []RouteRow
	CSS        template.CSS
	ChartJS    template.JS
	DataLabels template.JS
	App        template.JS
	Data       template.JS
	// Predictions and Drift are drawn by the template itself (no script
	// needed); DriftMetrics are the drift table's columns.
	Predictions  []Prediction
	Drift        []ledger.Drift
	DriftMetrics []string
	DriftRecent  int
}

// sourceMapRE matches a trailing source map comment, which would make a
// browser's developer tools look for a file next to the report.
var sourceMapRE = regexp.MustCompile(`(?m)^//# sourceMappingURL=\S+\s*$`)

// Render writes the report as one self-contained HTML page: styles,
// Chart.js, the datalabels plugin, the page script and the report's JSON
// are all inline, and nothing refers to the network.
func Render(w io.Writer, r Report) error {
	tmpl, err := template.New("report.html.tmpl").Funcs(template.FuncMap{
		"num": func(v float64) string { return fmt.Sprintf("%.4g", v) },
		"pct": pct,
		"ratio": func(r *float64) string {
			if r == nil {
				return "n/a"
			}
			return fmt.Sprintf("%.3f", *r)
		},
	}).Funcs(driftFuncs()).ParseFS(assets, "assets/report.html.tmpl", "assets/drift.html.tmpl")
	if err != nil {
		return fmt.Errorf("parsing report template: %w", err)
	}
	read := func(name string) (string, error) {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", name, err)
		}
		if bytes.Contains(bytes.ToLower(b), []byte("</script")) {
			// Inline, this would end the script element early.
			return "", fmt.Errorf("%s contains </script and cannot be inlined", name)
		}
		return sourceMapRE.ReplaceAllString(string(b), ""), nil
	}
	p := page{Title: r.Title, Predictions: r.Predictions, Drift: r.Drift, DriftMetrics: ledger.PredictionMetrics(), DriftRecent: ledger.DriftRecent}
	for _, f := range []struct {
		name string
		set  func(string)
	}{
		{"report.css", func(s string) { p.CSS = template.CSS(s) }},
		{"vendor/chart.umd.min.js", func(s string) { p.ChartJS = template.JS(s) }},
		{"vendor/chartjs-plugin-datalabels.min.js", func(s string) { p.DataLabels = template.JS(s) }},
		{"report.js", func(s string) { p.App = template.JS(s) }},
	} {
		s, err := read(f.name)
		if err != nil {
			return err
		}
		f.set(s)
	}
	p.Routes = r.Routes
	// encoding/json escapes <, > and & in strings, so the data cannot
	// close its script element whatever trial names hold.
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding report data: %w", err)
	}
	p.Data = template.JS(data)
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}
