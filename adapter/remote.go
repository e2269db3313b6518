package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/autoinfer/autoinfer/adapter/gate"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/trials"
)

// A deployment with a RemoteRunner (the kubernetes target's in-cluster
// runner) runs the rest of the trial elsewhere: this process provisions the
// workers and watches them, the runner (`autoinfer trial runner`, next to
// the workers) parses the same spec, adopts the workers, runs router,
// warm-up, driver and gate exactly as a local trial, and hands back the
// row it would have recorded, which this process records in its own ledger.

// RemoteTrial is the runner's input: the trial (its spec, name and
// replicate) and the workers provisioned for it.
type RemoteTrial struct {
	Spec        []byte `json:"spec"`
	DefaultName string `json:"default_name,omitempty"`
	Trial       string `json:"trial"`
	// What the caller's trial carries beyond its spec: the replicate, and
	// the seed and hashes that --repeats recomputes.
	Replicate trials.Replicate `json:"replicate"`
	Seed      int64            `json:"seed"`
	Repeats   int              `json:"repeats,omitempty"`
	SpecHash  string           `json:"spec_hash"`
	SweepID   string           `json:"sweep_id,omitempty"`
	// The caller's own checks: --assert, and the baseline row (its Failure
	// left nil) with tolerance and metrics.
	Assertions []trials.Assertion `json:"assertions,omitempty"`
	Baseline   *RemoteBaseline    `json:"baseline,omitempty"`
	// The host-load bounds the caller runs with (0: the spec's).
	ScheduleDelayLimit  time.Duration   `json:"schedule_delay_limit,omitempty"`
	EngineLagRatioLimit float64         `json:"engine_lag_ratio_limit,omitempty"`
	EngineLagUnbounded  bool            `json:"engine_lag_unbounded,omitempty"`
	Workers             []target.Worker `json:"workers"`
	Hardware            *RemoteHardware `json:"hardware,omitempty"`
}

// RemoteBaseline is Baseline on the wire.
type RemoteBaseline struct {
	Row       ledger.Trial `json:"row"`
	Tolerance float64      `json:"tolerance"`
	Metrics   []string     `json:"metrics,omitempty"`
}

// RemoteHardware is target.Hardware on the wire.
type RemoteHardware struct {
	Label  string          `json:"label"`
	Config json.RawMessage `json:"config,omitempty"`
	Nodes  []string        `json:"nodes,omitempty"`
}

// RemoteResult is the runner's output: the row and request records it
// would have written, and the outcome's figures. Failures travel encoded
// (failure.Encode), the row's Failure left nil.
type RemoteResult struct {
	Row        ledger.Trial         `json:"row"`
	Failure    *encodedFailure      `json:"failure,omitempty"`
	Violations []encodedFailure     `json:"violations,omitempty"`
	Requests   []ledger.Request     `json:"requests"`
	Summary    driver.Summary       `json:"summary"`
	Gate       *gate.Result         `json:"gate,omitempty"`
	Router     *RouterInfo          `json:"router,omitempty"`
	Window     ledger.Window        `json:"window"`
	Warmup     driver.WarmupOutcome `json:"warmup"`
}

type encodedFailure struct {
	Kind failure.Kind    `json:"kind"`
	Data json.RawMessage `json:"data"`
}

func encodeFailure(f failure.Failure) (*encodedFailure, error) {
	if f == nil {
		return nil, nil
	}
	k, data, err := failure.Encode(f)
	if err != nil {
		return nil, err
	}
	return &encodedFailure{Kind: k, Data: data}, nil
}

func (e *encodedFailure) decode() (failure.Failure, error) {
	if e == nil {
		return nil, nil
	}
	return failure.Decode(e.Kind, e.Data)
}

// runRemote hands the trial to the deployment's runner and decodes what
// it recorded. Worker exits seen here while it ran are kept for record.
func (tr *trialRun) runRemote(ctx context.Context, dep *target.Deployment) (*RemoteResult, error) {
	in := RemoteTrial{Spec: tr.t.Source.Data, DefaultName: tr.t.Source.DefaultName, Trial: tr.t.Name,
		Replicate: tr.t.Replicate, Seed: tr.t.Seed, Repeats: tr.t.Repeats, SpecHash: tr.t.SpecHash, SweepID: tr.t.SweepID,
		ScheduleDelayLimit: tr.opts.ScheduleDelayLimit, Workers: dep.Workers, Assertions: tr.opts.Assertions}
	if b := tr.baseline; b.Row != nil {
		in.Baseline = &RemoteBaseline{Row: *b.Row, Tolerance: b.Tolerance, Metrics: b.Metrics}
		in.Baseline.Row.Failure = nil
	}
	if lim := tr.opts.EngineLagRatioLimit; math.IsInf(lim, 1) {
		in.EngineLagUnbounded = true
	} else {
		in.EngineLagRatioLimit = lim
	}
	if len(in.Spec) == 0 {
		return nil, errors.New("the trial has no spec source to hand to the runner")
	}
	if hw := dep.Hardware; hw != nil {
		cfg, err := json.Marshal(hw.Config)
		if err != nil {
			return nil, fmt.Errorf("encoding hardware identity: %w", err)
		}
		in.Hardware = &RemoteHardware{Label: hw.Label, Config: cfg, Nodes: hw.Nodes}
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding the runner's trial: %w", err)
	}
	tr.log.Info("running the trial next to the workers", "trial", tr.t.Name)
	out, err := dep.Remote.RunRemote(ctx, payload)
	tr.obs.WorkerExits = workerExits(dep.Exits())
	if err != nil {
		return nil, fmt.Errorf("remote runner: %w", err)
	}
	var res RemoteResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("decoding the runner's result: %w", err)
	}
	return &res, nil
}

// recordRemote records the runner's row in this process's ledger. A
// worker that crashed while it ran (which only this process can see)
// fails the trial as WorkerCrashed, as it would have locally.
func (tr *trialRun) recordRemote(ctx context.Context, res *RemoteResult) (Outcome, error) {
	row := res.Row
	out := Outcome{Name: row.Name, Status: row.Status, Summary: res.Summary, Gate: res.Gate, Router: res.Router,
		Window: res.Window, Warmup: res.Warmup}
	var err error
	if out.Failure, err = res.Failure.decode(); err != nil {
		return out, fmt.Errorf("decoding the runner's failure: %w", err)
	}
	for _, v := range res.Violations {
		f, err := v.decode()
		if err != nil {
			return out, fmt.Errorf("decoding the runner's violations: %w", err)
		}
		out.Violations = append(out.Violations, f)
	}
	if len(tr.obs.WorkerExits) > 0 {
		out.Status, out.Failure = ledger.StatusFailed, tr.obs.WorkerExits[0]
	}
	aborted := ctx.Err() != nil
	if aborted {
		out.Status = ledger.StatusAborted
	}
	row.Status, row.Failure = out.Status, out.Failure
	// Written even after Ctrl-C, unbounded, as record does.
	rec, err := tr.opts.Ledger.RecordSeq(context.WithoutCancel(ctx), row, ledger.RequestSeq(res.Requests))
	if err != nil {
		return out, fmt.Errorf("writing ledger row: %w", err)
	}
	out.RowID, out.MarkedStale = rec.ID, rec.MarkedStale
	if aborted {
		return out, fmt.Errorf("trial %s aborted: %w", tr.t.Name, ctx.Err())
	}
	return out, nil
}

// RunRemoteTrial is the runner's side (`autoinfer trial runner`): it
// parses the payload's trial, runs it against the workers it lists
// without provisioning anything, and returns the encoded RemoteResult.
// opts.Ledger is ignored: the row goes back to the caller.
func RunRemoteTrial(ctx context.Context, payload []byte, kinds []target.Kind, opts Options) ([]byte, error) {
	var in RemoteTrial
	if err := json.Unmarshal(payload, &in); err != nil {
		return nil, fmt.Errorf("decoding the runner's trial: %w", err)
	}
	ts, err := trials.Source{Data: in.Spec, DefaultName: in.DefaultName}.Parse(kinds)
	if err != nil {
		return nil, err
	}
	var t *trials.Trial
	for i := range ts {
		if ts[i].Name == in.Trial {
			t = &ts[i]
		}
	}
	if t == nil {
		return nil, fmt.Errorf("the spec has no trial %q", in.Trial)
	}
	t.Replicate, t.Seed, t.Repeats, t.SpecHash, t.SweepID = in.Replicate, in.Seed, in.Repeats, in.SpecHash, in.SweepID
	opts.ScheduleDelayLimit, opts.EngineLagRatioLimit = in.ScheduleDelayLimit, in.EngineLagRatioLimit
	opts.Assertions = in.Assertions
	var base Baseline
	if b := in.Baseline; b != nil {
		base = Baseline{Row: &b.Row, Tolerance: b.Tolerance, Metrics: b.Metrics}
	}
	if in.EngineLagUnbounded {
		opts.EngineLagRatioLimit = math.Inf(1)
	}
	dep := target.NewDeployment(in.Workers, nil)
	if hw := in.Hardware; hw != nil {
		dep.Hardware = &target.Hardware{Label: hw.Label, Config: hw.Config, Nodes: hw.Nodes}
	}
	rec := &capture{}
	opts.Ledger = rec
	r, err := New(opts)
	if err != nil {
		return nil, err
	}
	r.adopt = dep
	out, err := r.RunAgainst(ctx, *t, base)
	if err != nil && rec.row == nil {
		return nil, err
	}
	res := RemoteResult{Row: *rec.row, Requests: rec.reqs, Summary: out.Summary, Gate: out.Gate, Router: out.Router,
		Window: out.Window, Warmup: out.Warmup}
	res.Row.Failure = nil
	if res.Failure, err = encodeFailure(out.Failure); err != nil {
		return nil, err
	}
	for _, v := range out.Violations {
		e, err := encodeFailure(v)
		if err != nil {
			return nil, err
		}
		res.Violations = append(res.Violations, *e)
	}
	return json.Marshal(res)
}

// capture is the runner's Recorder: it keeps the row for the caller.
type capture struct {
	row  *ledger.Trial
	reqs []ledger.Request
}

func (c *capture) RecordSeq(_ context.Context, t ledger.Trial, reqs iter.Seq2[ledger.Request, error]) (ledger.Recorded, error) {
	c.row, c.reqs = &t, nil
	for r, err := range reqs {
		if err != nil {
			return ledger.Recorded{}, err
		}
		c.reqs = append(c.reqs, r)
	}
	return ledger.Recorded{}, nil
}

// adopted is the provisioner of a runner: the workers exist already.
type adopted struct{ dep *target.Deployment }

func (a adopted) Provision(context.Context, target.Topology) (*target.Deployment, error) {
	return a.dep, nil
}
