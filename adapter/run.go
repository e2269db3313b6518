package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/adapter/gate"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/stale"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim/calibrate"
	"github.com/autoinfer/autoinfer/trials"
)

// teardownTimeout bounds stopping the router and the workers, also after
// Ctrl-C.
const teardownTimeout = 30 * time.Second

// Recorder writes a finished trial; *ledger.Ledger is one.
type Recorder interface {
	// RecordSeq writes t with the request records reqs yields (a run's
	// come from its spool; *ledger.Ledger's RecordSeq).
	RecordSeq(ctx context.Context, t ledger.Trial, reqs iter.Seq2[ledger.Request, error]) (ledger.Recorded, error)
}

// Options configure a Runner.
type Options struct {
	// Ledger receives one row per trial.
	Ledger Recorder
	// Binary is the autoinfer executable a `launch: process` router runs;
	// empty means this process's own executable.
	Binary string
	// WorkDir holds router configs and logs; empty means a temporary
	// directory per trial.
	WorkDir string
	// Progress is called after every finished request (warm-up and measured).
	Progress func(driver.Progress)
	// Assertions are checked on every trial besides its spec's own
	// (trial run --assert).
	Assertions []trials.Assertion
	// ScheduleDelayLimit, when set, overrides every spec's
	// checks.max_schedule_delay_p99_ms: the driver's p99 lateness (send
	// time after due time) above which a trial fails as HostOverloaded, its
	// figures describing this machine rather than the deployment
	// (trial run --max-schedule-delay).
	ScheduleDelayLimit time.Duration
	// EngineLagRatioLimit, when set, overrides every spec's
	// checks.max_engine_lag_ratio (trial run --max-engine-lag-ratio), and
	// the simulated engines' lag then judges the host also in a trial
	// whose virtual replay would (Runner.Replay): the caller asked for
	// that bound.
	EngineLagRatioLimit float64
	// StreamVirtual makes virtual-clock trials write rows without
	// per-request records (autoinfer search: hundreds of candidates). Every
	// virtual run streams its records into the summary (percentiles exact
	// up to SearchExactValues values per metric); without StreamVirtual a
	// trial spools them for its row as they complete (measured).
	StreamVirtual bool
	// Workloads, when set, shares streamed virtual trials' built
	// workloads between the runners given it (autoinfer search's
	// candidates read their trace once).
	Workloads *driver.Workloads
	// Prediction, when set, is a virtual row that already replays every
	// trial this runner runs (search --confirm's candidate: the same spec
	// and stream on the virtual clock): a real-time trial on simulated
	// engines is judged against its figures and linked to it, and runs no
	// replay of its own (Runner.Replay).
	Prediction *ledger.Trial
	// Decisions, when set, receives every routing decision of a
	// virtual-clock trial as one JSON line (DecisionLine), in the order the
	// router made them (trial run --record-decisions). A real-time trial
	// writes none.
	Decisions io.Writer
	// CalibrationProgress receives the calibration probe's progress lines
	// of a trial whose target calibrates (calibrate: true); nil: none.
	CalibrationProgress io.Writer
	// Logger reports the lifecycle; nil discards.
	Logger *slog.Logger
}

// SearchExactValues is how many values per latency metric a streamed
// virtual trial keeps exactly (32 MiB at most per metric); past it the
// percentiles are within metrics.PercentileRelError and the summary's
// percentile_rel_error says so.
const SearchExactValues = 1 << 22

// Runner runs trials one at a time.
type Runner struct {
	opts   Options
	log    *slog.Logger
	client *http.Client
	hooks  hooks
	// adopt, when set, is the deployment every trial runs against instead
	// of provisioning one: the in-cluster runner's (RunRemoteTrial).
	adopt *target.Deployment
}

// hooks are seams for this package's tests: inject faults into freshly
// provisioned workers, adjust what the driver is asked to do, or script the
// driver's clock.
type hooks struct {
	provisioned func(ctx context.Context, dep *target.Deployment)
	driver      func(*driver.Config)
	clock       func() time.Time
	// edge runs at the measured window's edges ("begin" right before the
	// runner's own snapshot, "end" right after it), with no traffic in
	// between: a test scrapes the workers there itself.
	edge func(ctx context.Context, edge string)
	// calibrate adjusts a calibration's configuration before its probe.
	calibrate func(*calibrate.Config)
}

// New returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Ledger == nil {
		return nil, errors.New("adapter: a ledger is required")
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding autoinfer's executable: %w", err)
		}
		opts.Binary = exe
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{opts: opts, log: log, client: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Outcome is what one trial produced.
type Outcome struct {
	Name string
	// Clock is "real" or "virtual" (a prediction, labelled wherever shown).
	Clock   string
	RowID   int64
	Status  ledger.Status
	Failure failure.Failure
	Summary driver.Summary
	Gate    *gate.Result
	// Router is nil when no router ran (one replica, no PD).
	Router *RouterInfo
	// Window are the workers' figures over the measured window (prefix-cache
	// hit rate, preemptions, KV usage and transfers, CPU-tier hits, the
	// simulated engines' lag ratio), in total and per engine; nil figures
	// were not exported.
	Window ledger.Window
	// Warmup is what the warm-up sent and how much of it failed, by type.
	Warmup      driver.WarmupOutcome
	MarkedStale []stale.Mark
	// BaselineRow is the row the trial was compared with, 0 for none.
	BaselineRow int64 `json:"baseline_row,omitempty"`
	// Violations are every check the trial failed (assertions, baseline),
	// in order; the first is Failure when nothing else failed first.
	Violations []failure.Failure `json:"violations,omitempty"`
	// ReplayRow is the virtual row of the trial's own replay (the row's
	// predicted_by), 0 when none ran; Replay pairs the figures the host was
	// judged by with the replay's (on real servers a profile describes,
	// the figures it predicted; they judge nothing there).
	ReplayRow int64                  `json:"replay_row,omitempty"`
	Replay    []failure.ReplayFigure `json:"replay,omitempty"`
	// Calibration is what the target's calibration did before the
	// measured run (calibrate: true), nil when it asked for none.
	Calibration *Calibration `json:"calibration,omitempty"`
}

// RouterInfo says which router served the trial and where its metrics were.
type RouterInfo struct {
	Launch     string
	URL        string
	MetricsURL string
}

// Run runs one trial end to end and records it. The returned error is set
// only when the trial could not be recorded at all; a trial that ran and
// failed is an Outcome with Status failed. When ctx ends mid-trial, Run
// tears down, records an aborted row and returns ctx's error.
func (r *Runner) Run(ctx context.Context, t trials.Trial) (Outcome, error) {
	return r.RunAgainst(ctx, t, Baseline{})
}

// RunAgainst is Run with a baseline check: a metric worse than the
// baseline row's by more than its tolerance fails the trial as
// BaselineRegressed before the row is written.
func (r *Runner) RunAgainst(ctx context.Context, t trials.Trial, base Baseline) (Outcome, error) {
	return r.run(ctx, t, base, nil)
}

// run is RunAgainst with an optional probe of the engines' request timings
// (real time, sim target).
func (r *Runner) run(ctx context.Context, t trials.Trial, base Baseline, probe *splitProbe) (Outcome, error) {
	tr := &trialRun{Runner: r, t: t, started: time.Now(), baseline: base, probe: probe}
	tr.runID = fmt.Sprintf("%s-%d", slug(t.Name), tr.started.UnixNano())
	tr.executeOnClock(ctx)
	tr.replay(ctx) // a real-time trial on simulated engines: judged by its own virtual replay
	return tr.record(ctx)
}

// executeOnClock runs the trial on its clock: simulated in virtual time,
// or provisioned and driven in real time.
func (tr *trialRun) executeOnClock(ctx context.Context) {
	if tr.t.Virtual() {
		tr.executeVirtual(ctx)
		return
	}
	tr.execute(ctx)
}

// slug makes a trial name safe for a header value and a directory name.
func slug(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// trialRun is one trial's state while it runs.
type trialRun struct {
	*Runner
	t        trials.Trial
	started  time.Time
	runID    string
	baseline Baseline

	dep    *target.Deployment
	remote *RemoteResult // what the deployment's remote runner recorded
	router *runningRouter
	// key is the router's API key ("" for an open router); viaRouter
	// sends it to the router's origin only.
	key       string
	viaRouter *http.Client
	result    *driver.Result
	gate      *gate.Result
	obs       failure.Observation
	seen      observed
	window    *window
	warmup    driver.WarmupOutcome
	probe     *splitProbe // nil: the engines' timings are not collected
	// measured takes the run's records as they become final (nil: the
	// records are the result's).
	measured *measured
	// replayRow is the virtual row of the trial's replay, 0 for none;
	// replayFigs pair its figures with the measured ones.
	replayRow  int64
	replayFigs []failure.ReplayFigure
	// calibration is what the target's calibration did (nil: none asked);
	// calibrated the options naming its profile, which the replay runs.
	calibration *Calibration
	calibrated  target.Options
}

// execute provisions, drives, gates and observes; every error ends up in
// tr.obs so the row says what went wrong. Teardown always runs.
func (tr *trialRun) execute(ctx context.Context) {
	defer tr.teardown(ctx)
	key, err := tr.routerKey()
	if err != nil {
		tr.obs.Err = err
		return
	}
	tr.key = key
	var prov target.Provisioner = adopted{tr.adopt}
	if tr.adopt == nil {
		prov, err = provisioner(tr.t.Target, tr.log)
	}
	if err != nil {
		tr.obs.Err = err
		return
	}
	tr.log.Info("provisioning workers", "trial", tr.t.Name, "target", tr.t.Target.Kind)
	dep, err := prov.Provision(ctx, tr.t.Topology.Target())
	if err != nil {
		tr.obs.WorkerStartFailures, tr.obs.Err = workerStartFailures(err), err
		return
	}
	tr.dep = dep
	if hw := dep.Hardware; hw != nil {
		tr.log.Info("hardware identity", "hardware", hw.Label, "nodes", hw.Nodes)
		if declared := tr.t.Target.Hardware; declared != "" && declared != hw.Label {
			tr.obs.Err = fmt.Errorf("target.hardware is %q but the workers run on %s (nodes %s)", declared, hw.Label, strings.Join(hw.Nodes, ", "))
			return
		}
	}
	if dep.Remote != nil {
		tr.remote, tr.obs.Err = tr.runRemote(ctx, dep)
		return
	}
	if tr.hooks.provisioned != nil {
		tr.hooks.provisioned(ctx, dep)
	}
	if tr.probe != nil {
		tr.probe.attach(dep)
	}
	if err := tr.calibrate(ctx, dep); err != nil {
		tr.obs.Err = err
		return
	}
	baseURL := dep.Workers[0].URL
	if tr.t.RouterLaunched() {
		cfg := routerConfig(tr.t.Router, dep)
		rr, err := launchRouter(ctx, tr.t.Router, cfg, tr.opts.Binary, tr.workDir, tr.log)
		if err != nil {
			var se *routerStartError
			if errors.As(err, &se) {
				tr.obs.RouterStart = &se.start
			}
			tr.obs.Err = err
			return
		}
		tr.router = rr
		baseURL = rr.URL
		if tr.viaRouter, err = routerClient(tr.client, rr.URL, tr.key); err != nil {
			tr.obs.Err = err
			return
		}
		tr.log.Info("router live", "launch", rr.Launch, "url", rr.URL)
	}
	tr.window = newWindow(tr.client, workerURLs(dep), tr.log.Warn)
	qg := &warmupGate{tr: tr, baseURL: baseURL}
	opts := append([]driver.Option{driver.WithProgress(tr.progress), driver.WithWindow(tr.windowHooks())}, qg.option()...)
	if tr.hooks.clock != nil {
		opts = append(opts, driver.WithClock(tr.hooks.clock))
	}
	// The overhead split matches the engines' timings with the kept
	// records; every other trial spools them as they complete.
	if tr.probe == nil {
		m, err := tr.measureReal()
		if err != nil {
			tr.obs.Err = err
			return
		}
		opts = append(opts, driver.WithRecords(m.add, SearchExactValues))
	}
	res, err := driver.Run(ctx, tr.driverConfig(baseURL), opts...)
	tr.window.end(ctx) // when the driver stopped inside the window
	tr.result = res
	if tr.probe != nil {
		tr.probe.done(res)
	}
	tr.obs.WorkerExits = workerExits(dep.Exits())
	if err != nil {
		tr.obs.NotReady = notReady(err)
		tr.obs.Err = fmt.Errorf("driver: %w", err)
		if ctx.Err() != nil {
			return
		}
	}
	if err := tr.measured.finish(); err != nil && tr.obs.Err == nil {
		tr.obs.Err = err
	}
	qg.keep(ctx)
	tr.observe(ctx)
}

func (tr *trialRun) progress(p driver.Progress) {
	if tr.opts.Progress != nil {
		tr.opts.Progress(p)
	}
}

// driverConfig maps the spec onto the driver. The trial name without its
// matrix suffix seeds the stream, so every trial of a sweep sends the same
// bytes; the run id tells the router's per-run counters apart.
func (tr *trialRun) driverConfig(baseURL string) driver.Config {
	s := tr.t.Spec
	warmup := s.Warmup.Requests
	if warmup == 0 {
		warmup = -1 // the driver reads 0 as "default"
	}
	cfg := driver.Config{
		BaseURL:        baseURL,
		Endpoint:       s.Workload.Endpoint,
		Model:          s.Topology.Engine.Model,
		Workload:       s.Workload.ResolvePaths(tr.t.SpecDir),
		Arrival:        s.Workload.Arrival,
		NumPrompts:     s.Workload.NumPrompts,
		Seed:           s.Seed,
		TrialID:        streamID(tr.t),
		RunID:          tr.runID,
		WarmupRequests: warmup,
		Goodput:        driver.SLO{TTFTMs: s.SLO.TTFTMs, TPOTMs: s.SLO.TPOTMs, E2ELMs: s.SLO.E2ELMs},
		Percentiles:    tr.t.Percentiles(),
		Label:          tr.t.Name,
		APIKey:         tr.key, // "" keeps the workload's api_key_env
	}
	cfg.Workload.RequestIDPrefix = tr.requestIDPrefix()
	if tr.t.Virtual() {
		cfg.HTTPOverhead = time.Duration(s.HTTPOverheadMs * float64(time.Millisecond))
		cfg.HTTPInbound = time.Duration(s.HTTPInboundMs * float64(time.Millisecond))
	}
	if tr.hooks.driver != nil {
		tr.hooks.driver(&cfg)
	}
	return cfg
}

// streamID is the trial's name before any matrix suffix.
func streamID(t trials.Trial) string { return t.StreamID() }

// workDir returns the directory for a child router's config and log: the
// configured one, or a new temporary directory for this trial, kept after
// the trial so its log can be read.
func (tr *trialRun) workDir() (string, error) {
	if tr.opts.WorkDir != "" {
		return tr.opts.WorkDir, nil
	}
	d, err := os.MkdirTemp("", "autoinfer-"+slug(tr.t.Name)+"-")
	if err != nil {
		return "", fmt.Errorf("creating work dir: %w", err)
	}
	return d, nil
}

// teardown stops the router, then the workers, with a bounded grace that
// survives ctx's cancellation.
func (tr *trialRun) teardown(ctx context.Context) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	if tr.router != nil {
		if err := tr.router.Close(tctx); err != nil {
			tr.log.Warn("stopping router", "err", err)
		}
	}
	if tr.dep != nil {
		if err := tr.dep.Close(tctx); err != nil {
			tr.log.Warn("stopping workers", "err", err)
		}
	}
}

// workerExits turns the workers that stopped on their own into what the
// classifier reads.
func workerExits(exits []target.Exit) []failure.WorkerCrashed {
	var out []failure.WorkerCrashed
	for _, e := range exits {
		out = append(out, failure.WorkerCrashed{Worker: e.Worker.String(), ExitCode: e.ExitCode, Signal: e.Signal,
			LogTail: failure.LogTail(e.LogTail)})
	}
	return out
}

func workerURLs(dep *target.Deployment) []string {
	out := make([]string, len(dep.Workers))
	for i, w := range dep.Workers {
		out[i] = w.URL
	}
	return out
}

func workerStartFailures(err error) []failure.WorkerStartupFailed {
	var se *target.StartupError
	if !errors.As(err, &se) {
		return nil
	}
	ps := startFailure(err)
	return []failure.WorkerStartupFailed{{Worker: se.Worker.String(), Detail: se.Reason, ExitCode: max(ps.ExitCode, 0),
		LogTail: failure.LogTail(se.LogTail)}}
}
