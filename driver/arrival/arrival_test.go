package arrival

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// TestGapStatistics checks that over many seeded draws the gaps have mean
// 1/rate and coefficient of variation 1/√burstiness.
//
// Tolerance: with n = 200,000 gaps the standard error of the mean is
// CV/√n ≤ 0.45% (CV ≤ 2 at burstiness 0.25) and that of the sample CV is
// about ½·√((2+6/k)/n) ≤ 0.6%, so 2% on the mean and 3% on the CV are more
// than four standard errors: the test fails only on a real bias.
func TestGapStatistics(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct{ rate, burstiness float64 }{
		{10, 1}, {250, 1}, {5, 0.25}, {40, 0.5}, {100, 2}, {3, 8},
	} {
		r := rand.New(rand.NewPCG(42, uint64(tc.rate*1000+tc.burstiness)))
		var sum, sumSq float64
		for range n {
			g := Gap(r, tc.rate, tc.burstiness)
			sum += g
			sumSq += g * g
		}
		mean := sum / n
		cv := math.Sqrt(sumSq/n-mean*mean) / mean
		wantMean, wantCV := 1/tc.rate, 1/math.Sqrt(tc.burstiness)
		if rel := math.Abs(mean-wantMean) / wantMean; rel > 0.02 {
			t.Errorf("rate %v burstiness %v: mean gap %.6f s, want %.6f (off by %.2f%%)", tc.rate, tc.burstiness, mean, wantMean, rel*100)
		}
		if rel := math.Abs(cv-wantCV) / wantCV; rel > 0.03 {
			t.Errorf("rate %v burstiness %v: CV %.4f, want %.4f (off by %.2f%%)", tc.rate, tc.burstiness, cv, wantCV, rel*100)
		}
	}
}

// TestOffsetsGamma checks the rescaled schedule: increasing, last due at
// n/rate, gaps keep the requested CV (same tolerance reasoning as above).
func TestOffsetsGamma(t *testing.T) {
	const n = 100_000
	a := Arrival{RequestRate: 50, Burstiness: 0.5}
	offs := a.Offsets(n, pcg(1, 2))
	want := time.Duration(float64(n) / 50 * float64(time.Second))
	if d := offs[n-1] - want; d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("last offset %v, want %v", offs[n-1], want)
	}
	var sum, sumSq float64
	prev := time.Duration(0)
	for i, o := range offs {
		if o < prev {
			t.Fatalf("offset %d = %v goes back from %v", i, o, prev)
		}
		g := (o - prev).Seconds()
		sum += g
		sumSq += g * g
		prev = o
	}
	mean := sum / n
	cv := math.Sqrt(sumSq/n-mean*mean) / mean
	if rel := math.Abs(cv-math.Sqrt2) / math.Sqrt2; rel > 0.03 {
		t.Errorf("CV %.4f, want %.4f", cv, math.Sqrt2)
	}
}

func TestOffsetsConstantInfClosedLoop(t *testing.T) {
	r := pcg(1, 1)
	c := Arrival{Kind: Constant, RequestRate: 4}.Offsets(4, r)
	for i, o := range c {
		if want := time.Duration(i+1) * 250 * time.Millisecond; o != want {
			t.Errorf("constant offset %d = %v, want %v", i, o, want)
		}
	}
	for _, a := range []Arrival{{}, {Kind: Inf}, {Kind: ClosedLoop, MaxConcurrency: 3}} {
		for i, o := range a.Offsets(5, r) {
			if o != 0 {
				t.Errorf("%+v: offset %d = %v, want 0", a, i, o)
			}
		}
	}
}

func TestOffsetsSeeded(t *testing.T) {
	a := Arrival{RequestRate: 7, Burstiness: 1.5}
	x := a.Offsets(50, pcg(9, 9))
	y := a.Offsets(50, pcg(9, 9))
	z := a.Offsets(50, pcg(9, 10))
	same := true
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("offset %d differs with the same seed: %v vs %v", i, x[i], y[i])
		}
		same = same && x[i] == z[i]
	}
	if same {
		t.Fatal("a different seed gave the same schedule")
	}
}

func TestValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		a    Arrival
		want string
	}{
		{Arrival{Kind: "bursty"}, "kind:"},
		{Arrival{RequestRate: -1}, "request_rate:"},
		{Arrival{RequestRate: 1, Burstiness: -2}, "burstiness:"},
		{Arrival{MaxConcurrency: -1}, "max_concurrency:"},
		{Arrival{Kind: Constant}, "request_rate:"},
		{Arrival{Kind: ClosedLoop}, "max_concurrency:"},
	} {
		err := tc.a.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want prefix %q", tc.a, err, tc.want)
		}
	}
	if err := (Arrival{RequestRate: 3, MaxConcurrency: 2}).Validate(); err != nil {
		t.Errorf("valid arrival rejected: %v", err)
	}
}

// TestRampUpConstantGaps: a constant linear ramp from 2 to 10 rps over 5
// requests sends request 0 at 0 and spaces each next one by 1/rate of the
// request before it: rates 2, 4, 6, 8, 10.
func TestRampUpConstantGaps(t *testing.T) {
	a := Arrival{Kind: Constant, RampUpStrategy: RampLinear, RampUpStartRPS: 2, RampUpEndRPS: 10}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	got := a.Offsets(5, pcg(1, 1))
	want := []float64{0, 0.5, 0.75, 0.75 + 1.0/6, 0.75 + 1.0/6 + 0.125}
	for i := range want {
		if d := got[i].Seconds() - want[i]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("offsets %v, want %v s", got, want)
		}
	}
	e := Arrival{RampUpStrategy: RampExponential, RampUpStartRPS: 1, RampUpEndRPS: 16}
	if r := e.RampRate(2, 5); r != 4 {
		t.Errorf("exponential ramp 1→16 at request 2 of 5: rate %v, want 4", r)
	}
}

func TestRampUpAndSweepValidation(t *testing.T) {
	err := Arrival{RampUpStrategy: RampExponential, RequestRate: 5, RampUpEndRPS: 3}.Validate()
	for _, want := range []string{"request_rate:", "ramp_up_start_rps:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if err := (Arrival{Kind: Sweep, Rates: 4}).Validate(); err != nil {
		t.Errorf("valid sweep rejected: %v", err)
	}
	if err := (Arrival{Kind: Gamma, RequestRate: 1, Rates: 4}).Validate(); err == nil || !strings.Contains(err.Error(), "rates:") {
		t.Errorf("rates without sweep: %v", err)
	}
}

// pcg is a generator constructor giving the same sequence at every call.
func pcg(a, b uint64) func() *rand.Rand {
	return func() *rand.Rand { return rand.New(rand.NewPCG(a, b)) }
}

// TestOffsetSeqIsOffsets: the lazy sequence equals the collected offsets
// for every kind, and stops when asked.
func TestOffsetSeqIsOffsets(t *testing.T) {
	for _, a := range []Arrival{{RequestRate: 7, Burstiness: 1.5}, {RequestRate: 3}, {Kind: Constant, RequestRate: 4}, {Kind: Inf},
		{Kind: Constant, RampUpStrategy: RampLinear, RampUpStartRPS: 2, RampUpEndRPS: 10}} {
		want := a.Offsets(40, pcg(3, 4))
		i := 0
		for o := range a.OffsetSeq(40, pcg(3, 4)) {
			if o != want[i] {
				t.Fatalf("%+v: offset %d = %v lazily, %v collected", a, i, o, want[i])
			}
			i++
			if i == 30 {
				break
			}
		}
		if i != 30 {
			t.Fatalf("%+v: sequence stopped after %d", a, i)
		}
	}
}

// TestOffsetsTwoPassesEqualOne: drawing the gaps twice from equal
// generators gives exactly the single-pass schedule (running sums of one
// generator's gaps, rescaled), so streams keep their hashes.
func TestOffsetsTwoPassesEqualOne(t *testing.T) {
	a := Arrival{RequestRate: 7, Burstiness: 0.7}
	r := rand.New(rand.NewPCG(5, 6))
	sums := make([]float64, 200)
	total := 0.0
	for i := range sums {
		total += Gap(r, 7, 0.7)
		sums[i] = total
	}
	got := a.Offsets(200, pcg(5, 6))
	for i, s := range sums {
		if want := seconds(s * (200 / 7.0 / total)); got[i] != want {
			t.Fatalf("offset %d = %v, single pass gives %v", i, got[i], want)
		}
	}
}

// Every problem is a *field.Error naming the key, in the one validation
// style the spec parser nests (no "key: message" string to split).
func TestValidateReportsFieldErrors(t *testing.T) {
	a := Arrival{Kind: "bogus", RequestRate: -1, Burstiness: math.Inf(1), MaxConcurrency: -2, Rates: 3, RampUpStartRPS: 2}
	paths, err := field.Paths(a.Validate())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kind", "request_rate", "burstiness", "max_concurrency", "rates", "ramp_up_strategy"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
}
