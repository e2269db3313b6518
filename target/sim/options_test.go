package sim_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/simtarget"
)

func TestNewNamesTheBadField(t *testing.T) {
	t.Parallel()
	fast, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.LookupProfile("tpu"); err == nil || !strings.Contains(err.Error(), "h100-llama3-8b") {
		t.Fatalf("unknown profile error should list the built-ins: %v", err)
	}
	ok := sim.Options{Engine: engine.Config{Model: "m"}, Profile: fast}
	if _, err := sim.New(ok); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
	bad := fast
	bad.LinkGBps = 0
	infinite, nanLink := fast, fast
	infinite.StepBaseMs = math.Inf(1) // would make a negative, timer-less step
	nanLink.LinkGBps = math.NaN()
	cases := []struct {
		name  string
		edit  func(*sim.Options)
		field string
	}{
		{"no model", func(o *sim.Options) { o.Engine.Model = "" }, "engine.model"},
		{"negative seqs", func(o *sim.Options) { o.Engine.MaxNumSeqs = -1 }, "engine.max_num_seqs"},
		{"context over capacity", func(o *sim.Options) { o.Engine.MaxModelLen = 1 << 20 }, "engine.max_model_len"},
		{"no profile", func(o *sim.Options) { o.Profile = sim.Profile{} }, "profile"},
		{"bad profile", func(o *sim.Options) { o.Profile = bad }, "link_gbps"},
		{"infinite step", func(o *sim.Options) { o.Profile = infinite }, "step_base_ms"},
		{"NaN link", func(o *sim.Options) { o.Profile = nanLink }, "link_gbps"},
		{"role", func(o *sim.Options) { o.Role = "both" }, "role"},
		{"dtype", func(o *sim.Options) { o.Engine.Dtype = "int3" }, "engine.dtype"},
		{"flip rate", func(o *sim.Options) { f := 1.5; o.FlipRate = &f }, "flip_rate"},
		{"faults", func(o *sim.Options) { o.Faults.ErrorRates = map[int]float64{503: 2} }, "error_rates[503]"},
		{"ranks", func(o *sim.Options) { o.Engine.DataParallelSize = 1000 }, "engine.data_parallel_size"},
	}
	for _, c := range cases {
		o := ok
		c.edit(&o)
		if _, err := sim.New(o); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v does not name %s", c.name, err, c.field)
		}
	}
}

func TestLinearProfileStepTimeFormula(t *testing.T) {
	t.Parallel()
	p := sim.Profile{Name: "lin", StepBaseMs: 4.5, CPUUsPerSeq: 5, PrefillUsPerToken: 20, DecodeUsPerSeq: 20,
		DecodeNsPerContextToken: 30, LinkGBps: 50}
	// 4.5 ms + 9 seqs·5 µs + 1000·20 µs + 8·20 µs + 16384·30 ns.
	if got, want := p.StepTime(1000, 8, 16384), time.Duration(4500e3+45e3+20000e3+160e3+491520); got != want {
		t.Fatalf("StepTime = %v, want %v", got, want)
	}
}

// A pull posts blocks × layers × 2 descriptors before its bytes cross the
// link: for 4096 Llama-3-8B tokens 3 ms + 16384 × 3.5 µs + 512 MiB at 50 GB/s.
func TestTransferTimeFormula(t *testing.T) {
	t.Parallel()
	p, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	want := 3*time.Millisecond + 16384*3500*time.Nanosecond + time.Duration(4096*131072/50)
	if got := p.TransferTime(4096); got != want {
		t.Fatalf("TransferTime(4096) = %v, want %v", got, want)
	}
}

// A spec's profile_overrides apply to a calibrated profile's coefficients and
// keep its step model; an unknown key is named.
func TestOverridesOnCalibratedProfile(t *testing.T) {
	t.Parallel()
	base, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	p, err := simtarget.ResolveProfile("h100-llama3-8b", map[string]any{"gpu_time_scale": 0.5, "step_base_ms": 0})
	if err != nil {
		t.Fatal(err)
	}
	if p.Model == nil || p.GPUTimeScale != 0.5 || p.StepBaseMs != 0 {
		t.Fatalf("overridden profile %+v", p)
	}
	if got, want := p.StepTime(0, 8, 8*512), (base.StepTime(0, 8, 8*512)-time.Duration(base.StepBaseMs*1e6))/2; got-want > time.Nanosecond || want-got > time.Nanosecond {
		t.Errorf("half the GPU time and no CPU base: %v, want %v", got, want)
	}
	if _, err := simtarget.ResolveProfile("h100-llama3-8b", map[string]any{"step_ms": 1}); err == nil || !strings.Contains(err.Error(), "step_ms") {
		t.Errorf("unknown key: %v", err)
	}
}
