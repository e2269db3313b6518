package stepmodel

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// TokenKnots are the token counts at which linear-layer tables are kept:
// every 32 tokens up to 1024, where GEMM tile quantisation makes the measured
// curve step, sparser where it is a straight line.
var TokenKnots = []float64{1, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448,
	480, 512, 544, 576, 608, 640, 672, 704, 736, 768, 800, 832, 864, 896, 928, 960, 992, 1024, 1152, 1280, 1408,
	1536, 1664, 1792, 1920, 2048, 2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096, 5120, 6144, 7168, 8192, 10240,
	12288, 14336, 16384, 20480, 24576, 28672, 32768}

// SizeKnots are the all-reduce message sizes (bytes) kept in tables.
var SizeKnots = []float64{2048, 8192, 32768, 131072, 262144, 524288, 1 << 20, 2 << 20, 4 << 20, 8 << 20,
	16 << 20, 32 << 20, 64 << 20}

// heldOut reports whether the i-th row (in token order) of a table is kept
// out of the fit, to test the interpolation on rows it never saw.
func heldOut(i int) bool { return i%4 == 2 }

// Calibration is everything the generator derives from vidur's data.
type Calibration struct {
	Archs      map[string]Arch
	Linear     map[PairKey]Table
	AllReduce  map[string]Table
	Efficiency map[string]Efficiency // by measured GPU
	Attention  AttentionFit
	// HeldOut are the measured rows each linear table was not fitted on.
	HeldOut map[PairKey][]Point
	// LinearErr is each table's mean absolute relative error on its
	// held-out rows.
	LinearErr map[PairKey]float64
	// DerivedErr is the architecture-derived linear model's mean absolute
	// relative error on each pair's held-out rows when that pair was left
	// out of the efficiency fit.
	DerivedErr map[PairKey]float64
}

// Calibrate fits every table and model parameter to v.
func Calibrate(v *Vidur) (*Calibration, error) {
	c := &Calibration{Archs: v.Archs, Linear: map[PairKey]Table{}, AllReduce: map[string]Table{}, Efficiency: map[string]Efficiency{},
		HeldOut: map[PairKey][]Point{}, LinearErr: map[PairKey]float64{}, DerivedErr: map[PairKey]float64{}}
	for _, k := range slices.SortedFunc(maps.Keys(v.Linear), comparePairs) {
		train, test := splitRows(v.Linear[k])
		t, err := FitTable(train, knotsUpTo(TokenKnots, train[len(train)-1].X), 0.001)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", k, err)
		}
		c.Linear[k], c.HeldOut[k] = t, test
		c.LinearErr[k] = meanAbsErr(test, t.Eval)
	}
	for _, k := range slices.Sorted(maps.Keys(v.AllReduce)) {
		pts := v.AllReduce[k]
		var knots []float64
		for _, k := range SizeKnots {
			if k <= pts[len(pts)-1].X {
				knots = append(knots, k)
			}
		}
		t, err := FitTable(pts, knots, 0.05)
		if err != nil {
			return nil, fmt.Errorf("all-reduce %s: %w", k, err)
		}
		c.AllReduce[k] = t
	}
	for _, g := range MeasuredGPUs {
		gpu, err := LookupGPU(g)
		if err != nil {
			return nil, err
		}
		e, err := FitEfficiency(gpu, c.samples(v, g, ""))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g, err)
		}
		c.Efficiency[g] = e
		for _, m := range VidurModels {
			e, err := FitEfficiency(gpu, c.samples(v, g, m.Short))
			if err != nil {
				return nil, fmt.Errorf("%s without %s: %w", g, m.Short, err)
			}
			for k, rows := range c.HeldOut {
				if k.GPU == g && k.Model == m.Short {
					c.DerivedErr[k] = meanAbsErr(rows, func(x float64) float64 { return e.LayerMs(v.Archs[k.Model], gpu, k.TP, x) })
				}
			}
		}
	}
	att, err := FitAttention(v.Attention)
	if err != nil {
		return nil, err
	}
	c.Attention = att
	return c, nil
}

// samples are the fitted tables of gpu at their knots, as efficiency-fit
// samples, leaving out model skip.
func (c *Calibration) samples(v *Vidur, gpu, skip string) []LinearSample {
	var out []LinearSample
	for _, k := range slices.SortedFunc(maps.Keys(c.Linear), comparePairs) {
		if k.GPU != gpu || k.Model == skip {
			continue
		}
		t := c.Linear[k]
		for i, x := range t.X {
			out = append(out, LinearSample{Arch: v.Archs[k.Model], TP: k.TP, T: x, Ms: t.Y[i]})
		}
	}
	return out
}

// splitRows sorts rows by tokens and splits them into fitted and held-out.
func splitRows(rows []Point) (train, test []Point) {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b Point) int { return cmpFloat(a.X, b.X) })
	for i, p := range sorted {
		if heldOut(i) {
			test = append(test, p)
		} else {
			train = append(train, p)
		}
	}
	return train, test
}

func knotsUpTo(knots []float64, last float64) []float64 {
	var out []float64
	for _, k := range knots {
		if k < last {
			out = append(out, k)
		}
	}
	return append(out, last)
}

func meanAbsErr(rows []Point, f func(float64) float64) float64 {
	sum := 0.0
	for _, p := range rows {
		sum += math.Abs(f(p.X)/p.Y - 1)
	}
	return sum / float64(len(rows))
}

func comparePairs(a, b PairKey) int {
	if a.GPU != b.GPU {
		return cmpString(a.GPU, b.GPU)
	}
	if a.Model != b.Model {
		return cmpString(a.Model, b.Model)
	}
	return a.TP - b.TP
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
