package cmd

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/autoinfer/autoinfer/ledger"
)

func newLedgerParetoCmd(o *ledgerOpts) *cobra.Command {
	var ff ledgerFilterFlags
	var x, y, plotFile, sweepFile string
	var includeStale bool
	var goodput []string
	c := &cobra.Command{
		Use:   "pareto",
		Short: "The Pareto front of two metrics over ok, non-stale trials",
		Long: `Print the trials no other trial beats on both metrics. Latencies, delays and
failures are minimised; throughputs, goodput, completions and cache hit rate
are maximised. Only ok rows are candidates; stale rows join with
--include-stale. --plot draws every matching ok row with the front highlighted.
--sweep-plot draws the sweep curves of the matching ok rows (rows equal in all
but their offered request rate, as a sweep records): p99 latency and goodput
by offered rate, each curve's knee (the highest rate with --attainment of its
requests within the SLOs) ringed. The SLO is --goodput, else the one the rows'
spec recorded; each knee is also printed to stderr.`,
		Example: `  autoinfer ledger pareto --x p99_ttft_ms --y output_throughput
  autoinfer ledger pareto --x median_tpot_ms --y request_goodput --where policy=cache_aware --plot front.png
  # which topology and policy give the most tokens/s under a TTFT p99 of 500 ms?
  autoinfer ledger pareto --x p99_ttft_ms --y output_throughput --bound 'p99_ttft_ms < 500'
  # the saturation curve and knee of a sweep (trial run of arrival.kind: sweep)
  autoinfer ledger pareto --sweep 3f2a9c0d1e5b7a64 --sweep-plot curve.png`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for _, m := range [][2]string{{"--x", x}, {"--y", y}} {
				if _, err := ledger.LookupMetric(m[1]); err != nil {
					return usageErr("%s: %w", m[0], err)
				}
			}
			for _, pf := range [][2]string{{"--plot", plotFile}, {"--sweep-plot", sweepFile}} {
				if ext := strings.ToLower(filepath.Ext(pf[1])); pf[1] != "" && ext != ".png" && ext != ".svg" {
					return usageErr("%s %q: want a .png or .svg file", pf[0], pf[1])
				}
			}
			slo, err := sweepSLO(goodput)
			if err != nil {
				return usageErr("--goodput: %w", err)
			}
			f, err := ff.filter()
			if err != nil {
				return err
			}
			f.IncludeStale = includeStale
			l, err := o.open(c.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			q := ledger.ParetoQuery{X: x, Y: y, Filter: f, AllPoints: plotFile != "" || sweepFile != ""}
			front, err := l.Pareto(c.Context(), q)
			if err != nil {
				return withCode(ExitInfra, err)
			}
			if plotFile != "" {
				if err := ledgerPlot(front, plotFile); err != nil {
					return withCode(ExitInfra, err)
				}
			}
			if sweepFile != "" {
				if err := plotSweepCurves(c, l, front, slo, sweepFile); err != nil {
					return err
				}
			}
			pts := front.OnFront()
			tbl := ledgerTable{header: []string{"id", "name", "sweep_id", x, y, "stale"}}
			for _, p := range pts {
				tbl.add(strconv.FormatInt(p.ID, 10), p.Name, p.SweepID, ledgerNum(p.X), ledgerNum(p.Y), strconv.FormatBool(p.Stale))
			}
			if pts == nil {
				pts = []ledger.Point{}
			}
			return ledgerRender(c.OutOrStdout(), o.output, tbl, map[string]any{
				"x": x, "x_direction": front.X.Direction.String(), "y": y, "y_direction": front.Y.Direction.String(), "front": pts,
			})
		},
	}
	ff.register(c)
	c.Flags().StringVar(&x, "x", "p99_ttft_ms", "metric on the x axis")
	c.Flags().StringVar(&y, "y", "output_throughput", "metric on the y axis")
	c.Flags().BoolVar(&includeStale, "include-stale", false, "let stale rows compete")
	c.Flags().StringVar(&plotFile, "plot", "", "also draw the rows and the front to FILE.png or FILE.svg")
	c.Flags().StringVar(&sweepFile, "sweep-plot", "", "also draw the sweep curves (latency and goodput by offered rate, knee marked) to FILE.png or FILE.svg")
	c.Flags().StringSliceVar(&goodput, "goodput", nil, "SLOs of the sweep curves' goodput and knee, as ttft:MS, tpot:MS, e2el:MS (default: the rows' spec)")
	return c
}

// ledgerPlot draws every point grey (stale ones hollow) and the front as a
// red line through red points; the file type follows the extension.
func ledgerPlot(front ledger.Front, file string) error {
	p := plot.New()
	p.Title.Text = "Pareto front"
	p.X.Label.Text = fmt.Sprintf("%s (%s is better)", front.X.Name, ledgerBetter(front.X.Direction))
	p.Y.Label.Text = fmt.Sprintf("%s (%s is better)", front.Y.Name, ledgerBetter(front.Y.Direction))
	var fresh, stale, best plotter.XYs
	for _, pt := range front.Points {
		xy := plotter.XY{X: pt.X, Y: pt.Y}
		switch {
		case pt.OnFront:
			best = append(best, xy)
		case pt.Stale:
			stale = append(stale, xy)
		default:
			fresh = append(fresh, xy)
		}
	}
	grey, red := color.RGBA{R: 150, G: 150, B: 150, A: 255}, color.RGBA{R: 200, A: 255}
	add := func(name string, xys plotter.XYs, shape draw.GlyphDrawer, c color.Color) error {
		if len(xys) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", name, err)
		}
		s.Shape, s.Color = shape, c
		p.Add(s)
		p.Legend.Add(name, s)
		return nil
	}
	if err := add("trials", fresh, draw.CircleGlyph{}, grey); err != nil {
		return err
	}
	if err := add("stale", stale, draw.RingGlyph{}, grey); err != nil {
		return err
	}
	if len(best) > 0 {
		line, err := plotter.NewLine(best)
		if err != nil {
			return fmt.Errorf("plotting the front: %w", err)
		}
		line.Color = red
		p.Add(line)
	}
	if err := add("front", best, draw.CircleGlyph{}, red); err != nil {
		return err
	}
	if err := p.Save(7*vg.Inch, 5*vg.Inch, file); err != nil {
		return fmt.Errorf("saving plot: %w", err)
	}
	return nil
}

func ledgerBetter(d ledger.Direction) string {
	if d == ledger.Maximize {
		return "higher"
	}
	return "lower"
}
