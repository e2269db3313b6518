package cmd

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
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

A repeated trial (repeats: N) is one point at its replicates' means, with
95% Student t intervals (x_ci, y_ci), and competes only when every replicate
is ok, fresh and within the bounds. A point the front dominates only by its
means (its intervals reach a front point's) is listed too, and both are
marked not separable: the data cannot tell which is better.


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
			pts := front.Points
			if q.AllPoints { // every point came back for the plots
				pts = slices.DeleteFunc(slices.Clone(pts), func(p ledger.Point) bool { return !p.OnFront && p.Separable() })
			}
			tbl := ledgerTable{header: []string{"id", "name", "sweep_id", x, y, "stale", "on_front", "replicates", x + "_ci", y + "_ci", "separable"}}
			for _, p := range pts {
				xci, yci, reps := "", "", ""
				if p.CI != nil {
					xci, yci, reps = ledgerCI(p.CI.XLo, p.CI.XHi), ledgerCI(p.CI.YLo, p.CI.YHi), strconv.Itoa(p.Replicates)
				}
				tbl.add(strconv.FormatInt(p.ID, 10), clockLabel(p.Name, p.Clock), p.SweepID, ledgerNum(p.X), ledgerNum(p.Y), strconv.FormatBool(p.Stale),
					strconv.FormatBool(p.OnFront), reps, xci, yci, ledgerSeparable(p))
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

// clockLabel marks a virtual row's name wherever it is shown: its figures
// are predictions, not measurements.
func clockLabel(name, clock string) string {
	if clock == ledger.ClockVirtual {
		return name + " [virtual]"
	}
	return name
}

// ledgerCI renders an interval as "[lo, hi]".
func ledgerCI(lo, hi float64) string { return "[" + ledgerNum(lo) + ", " + ledgerNum(hi) + "]" }

// ledgerSeparable says "yes", or "no: ids" naming the points this one
// cannot be told apart from.
func ledgerSeparable(p ledger.Point) string {
	if p.Separable() {
		return "yes"
	}
	ids := make([]string, len(p.NotSeparableFrom))
	for i, id := range p.NotSeparableFrom {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return "no: " + strings.Join(ids, ",")
}

// plotSeries is one group of points drawn alike.
type plotSeries struct {
	name   string
	points plotter.XYs
	labels []string
	shape  draw.GlyphDrawer
	color  color.Color
}

// paretoSeries groups the points as the plot draws them: grey off the
// front, red on it; filled when fresh, hollow (a ring) when stale; an orange
// triangle over a point that is not separable. Every point is labelled with
// its row id and its trial's settings.
func paretoSeries(front ledger.Front) []plotSeries {
	grey, red := color.RGBA{R: 150, G: 150, B: 150, A: 255}, color.RGBA{R: 200, A: 255}
	series := []plotSeries{
		{name: "trials", shape: draw.CircleGlyph{}, color: grey},
		{name: "stale", shape: draw.RingGlyph{}, color: grey},
		{name: "front", shape: draw.CircleGlyph{}, color: red},
		{name: "front (stale)", shape: draw.RingGlyph{}, color: red},
		{name: "not separable", shape: draw.TriangleGlyph{}, color: color.RGBA{R: 230, G: 140, A: 255}},
	}
	for _, pt := range front.Points {
		i := 0
		if pt.OnFront {
			i = 2
		}
		if pt.Stale {
			i++
		}
		series[i].points = append(series[i].points, plotter.XY{X: pt.X, Y: pt.Y})
		series[i].labels = append(series[i].labels, pointLabel(pt))
		if !pt.Separable() {
			// Drawn over the point, unlabelled: its label is already there.
			series[4].points = append(series[4].points, plotter.XY{X: pt.X, Y: pt.Y})
			series[4].labels = append(series[4].labels, "")
		}
	}
	return series
}

// pointLabel is "12 variant=2p2d": the row id and what distinguishes the
// trial within its sweep (its whole name outside one).
func pointLabel(pt ledger.Point) string {
	_, settings, ok := strings.Cut(pt.Name, "/")
	if !ok {
		settings = pt.Name
	}
	return strconv.FormatInt(pt.ID, 10) + " " + settings
}

// ledgerPlot draws the points (paretoSeries), the front as a red line, a
// label by each point and replicate groups' intervals as error bars; the
// file type follows the extension.
func ledgerPlot(front ledger.Front, file string) error {
	p := plot.New()
	p.Title.Text = "Pareto front"
	p.X.Label.Text = fmt.Sprintf("%s (%s is better)", front.X.Name, ledgerBetter(front.X.Direction))
	p.Y.Label.Text = fmt.Sprintf("%s (%s is better)", front.Y.Name, ledgerBetter(front.Y.Direction))
	var line plotter.XYs
	for _, pt := range front.OnFront() {
		line = append(line, plotter.XY{X: pt.X, Y: pt.Y})
	}
	for _, pt := range front.Points {
		if err := plotInterval(p, pt); err != nil {
			return err
		}
	}
	if len(line) > 0 {
		l, err := plotter.NewLine(line)
		if err != nil {
			return fmt.Errorf("plotting the front: %w", err)
		}
		l.Color = color.RGBA{R: 200, A: 255}
		p.Add(l)
	}
	for _, s := range paretoSeries(front) {
		if len(s.points) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.points)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", s.name, err)
		}
		sc.Shape, sc.Color = s.shape, s.color
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: s.points, Labels: s.labels})
		if err != nil {
			return fmt.Errorf("labelling %s: %w", s.name, err)
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].XAlign, labels.Offset = draw.XLeft, vg.Point{X: 4, Y: 2}
		}
		p.Add(sc, labels)
		p.Legend.Add(s.name, sc)
	}
	if err := p.Save(7*vg.Inch, 5*vg.Inch, file); err != nil {
		return fmt.Errorf("saving plot: %w", err)
	}
	return nil
}

// plotInterval draws a replicate group's intervals as error bars.
func plotInterval(p *plot.Plot, pt ledger.Point) error {
	if pt.CI == nil {
		return nil
	}
	bars := intervalBars{pt}
	xb, err := plotter.NewXErrorBars(bars)
	if err != nil {
		return fmt.Errorf("plotting the intervals of %s: %w", pt.ReplicateGroup, err)
	}
	yb, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return fmt.Errorf("plotting the intervals of %s: %w", pt.ReplicateGroup, err)
	}
	p.Add(xb, yb)
	return nil
}

// intervalBars is one group point as gonum/plot's error bar data.
type intervalBars struct{ pt ledger.Point }

func (b intervalBars) Len() int                  { return 1 }
func (b intervalBars) XY(int) (float64, float64) { return b.pt.X, b.pt.Y }
func (b intervalBars) XError(int) (float64, float64) {
	return b.pt.X - b.pt.CI.XLo, b.pt.CI.XHi - b.pt.X
}
func (b intervalBars) YError(int) (float64, float64) {
	return b.pt.Y - b.pt.CI.YLo, b.pt.CI.YHi - b.pt.Y
}

func ledgerBetter(d ledger.Direction) string {
	if d == ledger.Maximize {
		return "higher"
	}
	return "lower"
}
