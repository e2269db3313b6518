package calibrate

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// identifyTimeout bounds reading the server's identity (models, version,
// KV capacity) before the probe.
const identifyTimeout = 30 * time.Second

// Config is one calibration against a live server.
type Config struct {
	HTTP *http.Client
	URL  string
	// Base names the built-in profile whose step model is fitted.
	Base string
	// Name is the calibrated profile's name (default: "<base>-calibrated").
	Name     string
	Hardware string // declared by the user: the server cannot tell
	Seed     uint64
	Budget   time.Duration
	Rounds   int
	// MaxConcurrency is the largest concurrency probed (default 16).
	MaxConcurrency int
	// Engine is the served engine's batch limits for the replays that
	// check the fit (max_num_seqs, max_num_batched_tokens; 0: the base
	// profile's).
	Engine engine.Config
	// MaxError is the held-out error on TTFT and TPOT p50 above which the
	// profile is marked unfit (default 0.10).
	MaxError float64
	// MaxLagRatio and MaxTimerLate bound how late the host may run a group
	// it keeps (Load; defaults DefaultMaxLagRatio, DefaultMaxTimerLate).
	MaxLagRatio, MaxTimerLate float64
	Progress                  io.Writer
}

// Result is a finished calibration.
type Result struct {
	Fit      *Fit
	Server   sim.CalibratedServer
	Observed []Observed
	HeldOut  Figures // relative error per metric on the held-out groups
	// HeldOutGroups is how many probe groups the fit did not see.
	HeldOutGroups int
	// Overloaded is how many probe groups were dropped because the host ran
	// them late (Load).
	Overloaded int
	// PathOverhead is the time a request spends outside the engine's steps
	// (the HTTP path to the server and its tokens' way back): the median
	// of the fit groups' first requests' TTFT over the model's, which
	// arrive at an idle engine. It is added to every predicted TTFT and
	// E2E, as the virtual clock's http_overhead_ms is.
	PathOverhead time.Duration
	// Unfit is why the probe gave no profile to predict with ("": it did):
	// the held-out error beyond its bound, the host's load, or no usable
	// fit at all (Config.fit); File then says so and is refused where named.
	Unfit string
	// File is the profile file's YAML.
	File []byte
}

// Calibrate identifies the server, runs the probe, fits base's step model
// on four in five groups and checks it on the fifth: each held-out group is
// replayed on the virtual clock with the fitted profile and its figures
// compared with what the server measured. A probe that ran but gave no
// profile to predict with is a Result marked Unfit, with its file; the
// error is for a calibration that could not run (the server unreachable or
// refusing the probe, ctx ended).
func Calibrate(ctx context.Context, c Config) (*Result, error) {
	base, err := sim.LookupProfile(c.Base)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	if c.Name == "" {
		c.Name = c.Base + "-calibrated"
	}
	if c.MaxError == 0 {
		c.MaxError = 0.10
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = 16
	}
	// A server that accepts connections and never answers must not hold
	// the calibration past its budget before the probe even starts.
	ictx, cancel := context.WithTimeout(ctx, identifyTimeout)
	id, err := Identify(ictx, c.HTTP, c.URL)
	cancel()
	if err != nil {
		return nil, err
	}
	id.Hardware = c.Hardware
	p := &Probe{HTTP: c.HTTP, URL: c.URL, Model: id.Model, Seed: c.Seed, Budget: c.Budget, Rounds: c.Rounds,
		MaxConcurrency: c.MaxConcurrency, Progress: c.Progress}
	obs, err := p.Run(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Fit: &Fit{Profile: base}, Server: id, Observed: obs}
	why, err := c.fit(base, res)
	if err != nil {
		return nil, err
	}
	res.Unfit = strings.Join(why, "; ")
	res.File, err = profileFile(c, res)
	return res, err
}

// fit fits base's step model on four in five of res's groups, checks it on
// the fifth and fills res in; it says why the fit is unfit (none: it is
// fit). A probe that gives no usable fit (too few groups within the
// budget, every group late, steps that do not separate the coefficients,
// a fitted profile that cannot run) is unfit with the reason, never an
// error: the file then records what the probe saw and why no profile came
// of it. Errors are the replay's own.
func (c *Config) fit(base sim.Profile, res *Result) ([]string, error) {
	obs := res.Observed
	switch {
	case len(obs) == 0:
		return []string{fmt.Sprintf("no probe group completed within the budget %v (raise the budget)", c.Budget)}, nil
	case len(obs) < 3:
		return []string{fmt.Sprintf("only %d probe groups completed within the budget %v: need 3 or more (raise the budget)", len(obs), c.Budget)}, nil
	}
	kept, late, overloaded := c.dropOverloaded(obs)
	res.Overloaded = late
	var why []string
	if overloaded != "" {
		why = append(why, overloaded)
	}
	var fitSteps, heldSteps []Step
	var fitGroups, heldGroups []Observed
	for g := range kept {
		st := Steps(g, &kept[g])
		if g%5 == 4 || (len(kept) < 5 && g == len(kept)-1) {
			heldSteps, heldGroups = append(heldSteps, st...), append(heldGroups, kept[g])
			continue
		}
		fitSteps, fitGroups = append(fitSteps, st...), append(fitGroups, kept[g])
	}
	fit, err := FitSteps(base, fitSteps)
	if err != nil {
		return append(why, err.Error()), nil
	}
	if res.Server.NumGPUBlocks > 0 {
		fit.Profile.NumGPUBlocks = res.Server.NumGPUBlocks
	}
	res.Fit, res.HeldOutGroups = fit, len(heldGroups)
	named := fit.Profile
	named.Name = c.Name
	if err := named.Validate(); err != nil {
		why = append(why, fmt.Sprintf("the fitted profile cannot run: %v", err))
	} else if err := c.holdOut(res, fitGroups, heldGroups, heldSteps); err != nil {
		return nil, err
	}
	for _, m := range []string{MetricTTFTP50, MetricTPOTP50} {
		if e := res.HeldOut[m]; e > c.MaxError {
			why = append(why, fmt.Sprintf("held-out %s error %.1f %% exceeds %.0f %%", m, 100*e, 100*c.MaxError))
		}
	}
	if len(why) > 0 {
		if d := prefillMismatch(fit.Profile, fitGroups); d != "" {
			why = append(why, d)
		}
	}
	return why, nil
}

// holdOut measures the HTTP path on the fit groups and replays the held-out
// groups on res's fitted profile, setting res.PathOverhead and res.HeldOut.
func (c *Config) holdOut(res *Result, fitGroups, heldGroups []Observed, heldSteps []Step) error {
	opts := sim.Options{Profile: res.Fit.Profile, Engine: c.Engine}
	if res.Server.BlockSize > 0 {
		opts.Engine.BlockSize = res.Server.BlockSize
	}
	var err error
	if res.PathOverhead, err = PathOverhead(opts, fitGroups); err != nil {
		return err
	}
	pred, err := Replayed(opts, heldGroups)
	if err != nil {
		return err
	}
	res.HeldOut = Errors(Measure(Delayed(pred, res.PathOverhead)), Measure(heldGroups))
	res.HeldOut[MetricStep] = StepError(res.Fit.Profile, heldSteps)
	return nil
}

// dropOverloaded keeps the groups the host ran on time (Load), counts the
// late ones and says why the fit is no evidence when it could not keep
// enough: fewer than half of them, or fewer than 3 (then every group is
// kept, so that the profile file still shows what was measured, and it
// is marked unfit).
func (c *Config) dropOverloaded(obs []Observed) (kept []Observed, late int, why string) {
	maxLag, maxLate := c.MaxLagRatio, c.MaxTimerLate
	if maxLag == 0 {
		maxLag = DefaultMaxLagRatio
	}
	if maxLate == 0 {
		maxLate = DefaultMaxTimerLate
	}
	var worst string
	for _, o := range obs {
		w := o.Load.overloaded(maxLag, maxLate)
		if w == "" {
			kept = append(kept, o)
			continue
		}
		if worst == "" {
			worst = w
		}
	}
	late = len(obs) - len(kept)
	if late*2 <= len(obs) && len(kept) >= 3 {
		return kept, late, ""
	}
	why = fmt.Sprintf("host overloaded: %d of %d probe groups ran late (e.g. %s; bounds: server steps %.0f %% late, probe timers %.0f %% of a token gap); the fit would describe this host's load, not the server: calibrate on a quiet host",
		late, len(obs), worst, 100*maxLag, 100*maxLate)
	if len(kept) < 3 {
		return obs, late, why
	}
	return kept, late, why
}

// prefillMismatch says whether a newcomer's time to first token grows with
// its prompt much faster than the fitted step model's prefill cost: the
// mark of a server that times each request on its own instead of batching
// a prefill into the running decode steps ("" when it does not).
func prefillMismatch(p sim.Profile, groups []Observed) string {
	var xs, ys []float64
	for _, o := range groups {
		for _, r := range o.Requests[o.Group.Concurrency:] {
			xs, ys = append(xs, float64(r.PromptTokens-r.CachedTokens)), append(ys, ms(r.TTFT()))
		}
	}
	measured := slope(xs, ys) * 1e3 // µs per token
	b := sim.Batch{DecodeSeqs: 1, DecodeContext: 512}
	without := p.BatchTime(&b)
	b.Chunks = []sim.Chunk{{Tokens: 1000}}
	model := float64(p.BatchTime(&b)-without) / 1e3 / 1000
	if measured > 1.5*model+0.5 {
		return fmt.Sprintf("TTFT grows %.3g µs per uncached prompt token but a prefill in a decode step costs %.3g µs per token: the server does not batch prefills into decode steps (per-request timing), which the step model assumes",
			measured, model)
	}
	return ""
}

// slope is the least-squares slope of ys on xs (0 when xs do not vary).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// profileFile renders the calibrated profile file: the base, the fitted
// coefficients (and the KV capacity the server declared) and the record
// of the calibration.
func profileFile(c Config, res *Result) ([]byte, error) {
	cal := &sim.Calibration{Server: res.Server, Seed: c.Seed, Budget: c.Budget.String(), Groups: len(res.Observed),
		HeldOut: res.HeldOutGroups, Unfit: res.Unfit, HTTPOverheadMs: ms(res.PathOverhead), Overloaded: res.Overloaded}
	kv := "KV capacity: the base profile's (the server exposes no vllm:cache_config_info)"
	extra := map[string]any{}
	if res.Server.NumGPUBlocks > 0 {
		extra["num_gpu_blocks"] = res.Server.NumGPUBlocks
		kv = fmt.Sprintf("KV capacity: %d blocks, from the server's vllm:cache_config_info", res.Server.NumGPUBlocks)
	}
	return renderFile(c.Name, c.Base, res.Fit, res.HeldOut, cal, extra,
		fmt.Sprintf("calibrated by autoinfer sim calibrate --observe against %s (model %s, version %q, hardware %q), probe seed %d, %d groups (%d the host ran late), %d steps; %s; HTTP path %.3g ms outside the steps",
			res.Server.URL, res.Server.Model, res.Server.Version, res.Server.Hardware, c.Seed, len(res.Observed), res.Overloaded, res.Fit.Steps, kv, ms(res.PathOverhead)))
}

// renderFile renders a profile file of base with fit's coefficients (and
// extra ones), cal completed with the fit and the held-out errors, and
// the stated error built from them.
func renderFile(name, base string, fit *Fit, heldOut Figures, cal *sim.Calibration, extra map[string]any, provenance string) ([]byte, error) {
	coef := map[string]any{}
	maps.Copy(coef, extra)
	cal.Steps, cal.ResidualMs, cal.HeldOutError = fit.Steps, fit.ResidualMs, map[string]float64(heldOut)
	for _, k := range fit.Coefficients {
		coef[k.Name] = k.Value
		cal.Coefficients = append(cal.Coefficients, sim.FittedValue(k))
	}
	var errs []string
	for _, m := range slices.Sorted(maps.Keys(heldOut)) {
		errs = append(errs, fmt.Sprintf("%s %.1f %%", m, 100*heldOut[m]))
	}
	stated := "held-out error: " + strings.Join(errs, ", ")
	if len(errs) == 0 {
		stated = "no held-out error: no fitted profile to replay"
	}
	if cal.Unfit != "" {
		stated = "UNFIT (" + cal.Unfit + "); " + stated
	}
	return yaml.Marshal(sim.ProfileFile{Name: name, Base: base, Coefficients: coef, Calibration: cal, Error: stated, Provenance: provenance})
}
