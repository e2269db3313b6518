package calibrate

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// truth is the hidden profile of a test server: every coefficient of the
// linear step model non-zero, so that each must be recovered.
func truth() sim.Profile {
	p, err := sim.LookupProfile("fast")
	if err != nil {
		panic(err)
	}
	p.Name, p.StepBaseMs, p.CPUUsPerSeq, p.PrefillUsPerToken, p.DecodeUsPerSeq, p.DecodeNsPerContextToken = "truth", 2, 15, 2, 30, 50
	return p
}

// Acceptance 1: against each hidden-truth perturbation the fitted
// coefficients are within 5 % of the truth, and the fitted profile predicts
// another workload (other lengths, open-loop arrivals) within 5 % of what
// the server measures. The servers run in a synctest bubble on an in-memory
// network: the clock is exact, so the only error is the fit's.
func TestCalibrateRecoversHiddenTruth(t *testing.T) {
	t.Parallel()
	for name, perturb := range map[string]func(*sim.Profile){
		"faster decode":         func(p *sim.Profile) { p.DecodeUsPerSeq = 12 },
		"slower prefill":        func(p *sim.Profile) { p.PrefillUsPerToken = 6 },
		"larger per-seq cost":   func(p *sim.Profile) { p.CPUUsPerSeq = 60 },
		"different KV capacity": func(p *sim.Profile) { p.NumGPUBlocks = 1500 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := truth()
			perturb(&want)
			synctest.Test(t, func(t *testing.T) {
				n := simtest.NewNetwork()
				w := simtest.StartPipe(t, n, sim.Options{Profile: want})
				var progress bytes.Buffer
				res, err := Calibrate(t.Context(), Config{HTTP: n.Client(), URL: w.URL, Base: "fast", Seed: 7,
					Budget: time.Minute, Rounds: 1, Progress: &progress})
				if err != nil {
					t.Fatal(err)
				}
				if res.Unfit != "" {
					t.Fatalf("marked unfit: %s; fit %+v; held-out %v", res.Unfit, res.Fit.Coefficients, res.HeldOut)
				}
				got := res.Fit.Profile
				for _, c := range []struct {
					name      string
					got, want float64
				}{
					{"step_base_ms", got.StepBaseMs, want.StepBaseMs}, {"cpu_us_per_seq", got.CPUUsPerSeq, want.CPUUsPerSeq},
					{"prefill_us_per_token", got.PrefillUsPerToken, want.PrefillUsPerToken},
					{"decode_us_per_seq", got.DecodeUsPerSeq, want.DecodeUsPerSeq},
					{"decode_ns_per_context_token", got.DecodeNsPerContextToken, want.DecodeNsPerContextToken},
					{"num_gpu_blocks", float64(got.NumGPUBlocks), float64(want.NumGPUBlocks)},
				} {
					if e := math.Abs(c.got-c.want) / c.want; e > 0.05 {
						t.Errorf("%s fitted %.4g, truth %.4g (%.1f %% off)", c.name, c.got, c.want, 100*e)
					}
				}
				if !strings.Contains(progress.String(), "probe: round 1 group 10/10") {
					t.Errorf("progress does not show the last group:\n%s", progress.String())
				}
				measured := runWorkload(t, &client{http: n.Client(), base: w.URL, model: w.Server().Model(), start: time.Now()})
				pred, err := Predict(sim.Options{Profile: got, Engine: engine.Config{Model: "calibrate"}}, []Observed{measured})
				if err != nil {
					t.Fatal(err)
				}
				m := Measure([]Observed{measured})
				for k, e := range Errors(pred, m) {
					if e > 0.05 {
						t.Errorf("another workload: %s predicted %.4g, measured %.4g (%.1f %% off)", k, pred[k], m[k], 100*e)
					}
				}
				t.Logf("fit %+v; held-out %v; other workload predicted %v measured %v", res.Fit.Coefficients, res.HeldOut, pred, m)
			})
		})
	}
}

// runWorkload sends another workload than the probe's: 40 requests of
// 100-900 prompt and 8-64 output tokens, open loop, 3 ms apart on average.
func runWorkload(t *testing.T, c *client) Observed {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	o := Observed{Requests: make([]Request, 40)}
	eg, ctx := errgroup.WithContext(t.Context())
	for i := range o.Requests {
		o.Requests[i] = Request{Prompt: tokenizer.Generate(rng, 100+rng.IntN(800)), MaxTokens: 8 + rng.IntN(56)}
		gap := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		eg.Go(func() error { return c.send(ctx, &o.Requests[i], nil) })
		time.Sleep(gap) // the workload's arrival process, on the bubble's clock
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	return o
}

var _ = context.Background
