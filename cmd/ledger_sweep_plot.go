package cmd

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/report"
)

// curveMetrics are the latencies a sweep plot draws: the p99 of each
// metric the SLO bounds (all three bounds drawn as dashed lines), or TTFT
// and TPOT without an SLO.
func curveMetrics(slo *report.SLOInfo) (names []string, bounds []float64) {
	if slo == nil {
		return []string{"p99_ttft_ms", "p99_tpot_ms"}, []float64{0, 0}
	}
	for _, b := range []struct {
		name  string
		bound float64
	}{{"p99_ttft_ms", slo.TTFTMs}, {"p99_tpot_ms", slo.TPOTMs}, {"p99_e2el_ms", slo.E2ELMs}} {
		if b.bound > 0 {
			names, bounds = append(names, b.name), append(bounds, b.bound)
		}
	}
	return names, bounds
}

// sweepPlot draws each sweep curve in two panels over the offered rate:
// above, the p99 latencies with the SLO bounds; below, the goodput
// (requests/s within every SLO) and the achieved request rate. The knee of
// each curve is a large ring in both panels.
func sweepPlot(c report.Curves, rows map[int64]report.Row, file string) error {
	if len(c.Series) == 0 {
		return fmt.Errorf("no sweep curve: no ok row of the selection has an offered request rate")
	}
	lat, good := plot.New(), plot.New()
	lat.Title.Text = "Sweep: p99 latency by offered rate"
	lat.Y.Label.Text = "ms (lower is better)"
	good.Title.Text = "Goodput by offered rate"
	good.X.Label.Text = "offered request rate (req/s)"
	good.Y.Label.Text = "req/s"
	if c.SLO == nil {
		good.Title.Text += " (no SLO known: achieved rate only, no knee)"
	}
	names, bounds := curveMetrics(c.SLO)
	for i, s := range c.Series {
		color := plotutil.Color(i)
		for j, m := range names {
			xys := make(plotter.XYs, len(s.Points))
			for k, p := range s.Points {
				xys[k] = plotter.XY{X: p.Rate, Y: rows[p.ID].Metrics[m]}
			}
			if err := addCurve(lat, fmt.Sprintf("%s %s", s.Label, strings.TrimSuffix(m, "_ms")), xys, color, j); err != nil {
				return err
			}
		}
		achieved := make(plotter.XYs, len(s.Points))
		var goodput plotter.XYs
		for k, p := range s.Points {
			achieved[k] = plotter.XY{X: p.Rate, Y: rows[p.ID].Metrics["request_throughput"]}
			if p.Goodput != nil {
				goodput = append(goodput, plotter.XY{X: p.Rate, Y: *p.Goodput})
			}
		}
		if err := addCurve(good, s.Label+" achieved", achieved, color, 1); err != nil {
			return err
		}
		if len(goodput) > 0 {
			if err := addCurve(good, s.Label+" goodput", goodput, color, 0); err != nil {
				return err
			}
		}
		if err := markKnee(lat, good, s, rows, names, color); err != nil {
			return err
		}
	}
	for j, b := range bounds {
		if b <= 0 {
			continue
		}
		f := plotter.NewFunction(func(float64) float64 { return b })
		f.Dashes = plotutil.Dashes(j + 2)
		lat.Add(f)
		lat.Legend.Add(fmt.Sprintf("SLO %s <= %g ms", strings.TrimSuffix(strings.TrimPrefix(names[j], "p99_"), "_ms"), b), f)
	}
	// From zero, and high enough to show the SLO lines (a function line
	// does not widen the axes by itself).
	lat.Y.Min, good.Y.Min = 0, 0
	for _, b := range bounds {
		lat.Y.Max = max(lat.Y.Max, 1.1*b)
	}
	return saveStacked(file, lat, good)
}

// addCurve draws xys as a line through points, dashed by style.
func addCurve(p *plot.Plot, name string, xys plotter.XYs, c color.Color, style int) error {
	line, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", name, err)
	}
	line.Color, pts.Color = c, c
	line.Dashes = plotutil.Dashes(style)
	p.Add(line, pts)
	p.Legend.Add(name, line, pts)
	return nil
}

// markKnee rings the knee point of s in both panels.
func markKnee(lat, good *plot.Plot, s report.Series, rows map[int64]report.Row, names []string, c color.Color) error {
	if s.Knee == 0 {
		return nil
	}
	var kl, kg plotter.XYs
	for _, p := range s.Points {
		if p.ID != s.Knee {
			continue
		}
		for _, m := range names {
			kl = append(kl, plotter.XY{X: p.Rate, Y: rows[p.ID].Metrics[m]})
		}
		if p.Goodput != nil {
			kg = append(kg, plotter.XY{X: p.Rate, Y: *p.Goodput})
		}
	}
	for i, panel := range []struct {
		p   *plot.Plot
		xys plotter.XYs
	}{{lat, kl}, {good, kg}} {
		if len(panel.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(panel.xys)
		if err != nil {
			return fmt.Errorf("plotting the knee: %w", err)
		}
		sc.Shape, sc.Color, sc.Radius = draw.RingGlyph{}, c, vg.Points(7)
		panel.p.Add(sc)
		if i == 0 {
			panel.p.Legend.Add(fmt.Sprintf("%s knee", s.Label), sc)
		}
	}
	return nil
}

// saveStacked writes the two plots one above the other, with aligned x
// axes, as PNG or SVG by the file's extension.
func saveStacked(file string, top, bottom *plot.Plot) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	c, err := draw.NewFormattedCanvas(8*vg.Inch, 9*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("saving plot: %w", err)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
	cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(cs[0][0])
	bottom.Draw(cs[1][0])
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("saving plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("saving plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving plot: %w", err)
	}
	return nil
}

// sweepSLO is the --goodput SLO of `ledger pareto --sweep-plot`.
func sweepSLO(goodput []string) (metrics.SLO, error) {
	if len(goodput) == 0 {
		return metrics.SLO{}, nil
	}
	return parseGoodput(goodput)
}

// plotSweepCurves draws the curves of the query's rows to file and prints
// each curve's knee to stderr.
func plotSweepCurves(c *cobra.Command, l *ledger.Ledger, front ledger.Front, slo metrics.SLO, file string) error {
	var sel report.Selection
	for _, p := range front.Points {
		sel.IDs = append(sel.IDs, p.ID)
	}
	if len(sel.IDs) == 0 {
		return usageErr("--sweep-plot: no ok row matches the filters")
	}
	opt := report.Options{SLO: slo}
	if slo.Set() {
		opt.SLOSource = "--goodput"
	}
	curves, rows, err := report.SweepCurves(c.Context(), l, sel, opt)
	if err != nil {
		return withCode(ExitInfra, err)
	}
	if err := sweepPlot(curves, rows, file); err != nil {
		return usageErr("--sweep-plot: %w", err)
	}
	for _, s := range curves.Series {
		fmt.Fprintf(c.ErrOrStderr(), "sweep curve %s (%d rates): %s\n", s.Label, len(s.Points), s.KneeNote)
	}
	fmt.Fprintf(c.ErrOrStderr(), "sweep curves drawn to %s\n", file)
	return nil
}
