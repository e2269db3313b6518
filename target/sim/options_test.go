package sim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
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

func TestProfileStepTimeFormula(t *testing.T) {
	t.Parallel()
	p, _ := sim.LookupProfile("h100-llama3-8b")
	// 4.5 ms + 1000·20 µs + 8·20 µs + 16384·30 ns = 25.15 ms (pd.md coefficients).
	if got, want := p.StepTime(1000, 8, 16384).Microseconds(), int64(4500+20000+160+491); got != want {
		t.Fatalf("StepTime = %d µs, want %d", got, want)
	}
	// 4096 tokens × 131072 B over 50 GB/s ≈ 10.7 ms, plus 3 ms launch.
	if got := p.TransferTime(4096).Milliseconds(); got != 13 {
		t.Fatalf("TransferTime(4096) = %d ms, want 13", got)
	}
}
