package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// record classifies the trial and writes its row, in one transaction, and
// releases the run's spooled records.
func (tr *trialRun) record(ctx context.Context) (Outcome, error) {
	if m := tr.measured; m != nil {
		defer func() {
			if err := m.close(); err != nil {
				tr.log.Warn("removing the spooled request records", "trial", tr.t.Name, "err", err)
			}
		}()
	}
	if tr.remote != nil {
		return tr.recordRemote(ctx, tr.remote)
	}
	out := Outcome{Name: tr.t.Name, Clock: ledger.ClockReal, Gate: tr.gate, Window: tr.seen.Window, Warmup: tr.warmup}
	if tr.result != nil {
		out.Summary = tr.result.Summary
	}
	if tr.t.Virtual() {
		out.Clock = ledger.ClockVirtual
	}
	if tr.baseline.Row != nil {
		out.BaselineRow = tr.baseline.Row.ID
	}
	out.ReplayRow, out.Replay, out.Calibration = tr.replayRow, tr.replayFigs, tr.calibration
	if tr.router != nil {
		out.Router = &RouterInfo{Launch: tr.router.Launch, URL: tr.router.URL, MetricsURL: tr.router.MetricsURL()}
	}
	aborted := ctx.Err() != nil
	if aborted {
		out.Status = ledger.StatusAborted
	}
	row, reqs, err := tr.row(out)
	if err != nil {
		return out, fmt.Errorf("building ledger row: %w", err)
	}
	if !aborted {
		out.Failure = failure.Classify(tr.obs)
		if out.Failure == nil {
			// The checks are part of the record: a trial that broke one is
			// failed, so it never competes in fronts or marks rows stale.
			// They read the row about to be written, by catalogue name.
			out.Violations = tr.checkFailures(checkValues(row, out.Summary))
			if len(out.Violations) > 0 {
				out.Failure = out.Violations[0]
			}
		}
		out.Status = ledger.StatusOK
		if out.Failure != nil {
			out.Status = ledger.StatusFailed
		}
		row.Status, row.Failure = out.Status, out.Failure
	}
	// The write happens even after Ctrl-C (the aborted row) and no timer
	// bounds it: it grows with the trial (a record per request, sent or
	// not), so any fixed bound loses the rows of the largest trials on a
	// slow host, and the ledger's busy timeout already bounds a lock wait.
	// A second Ctrl-C does not cut it short (cmd.interruptible).
	seq := ledger.RequestSeq(reqs)
	if m := tr.measured; m != nil && tr.result != nil {
		seq = m.spool.records()
	}
	rec, err := tr.opts.Ledger.RecordSeq(context.WithoutCancel(ctx), row, seq)
	if err != nil {
		return out, fmt.Errorf("writing ledger row: %w", err)
	}
	out.RowID, out.MarkedStale = rec.ID, rec.MarkedStale
	if aborted {
		return out, fmt.Errorf("trial %s aborted: %w", tr.t.Name, ctx.Err())
	}
	return out, nil
}

// row builds the ledger row and its per-request records (none when
// measured spooled them).
func (tr *trialRun) row(out Outcome) (ledger.Trial, []ledger.Request, error) {
	engineJSON, err := json.Marshal(tr.t.Topology.Engine)
	if err != nil {
		return ledger.Trial{}, nil, fmt.Errorf("encoding engine config: %w", err)
	}
	workloadJSON, err := json.Marshal(tr.t.Workload)
	if err != nil {
		return ledger.Trial{}, nil, fmt.Errorf("encoding workload: %w", err)
	}
	id, err := tr.identity()
	if err != nil {
		return ledger.Trial{}, nil, err
	}
	row := ledger.Trial{
		Identity: id,
		Name:     tr.t.Name, SweepID: tr.t.SweepID, Status: out.Status,
		StartedAt: tr.started, FinishedAt: time.Now(), Seed: tr.t.Seed, SpecHash: tr.t.SpecHash,
		EngineConfig: engineJSON,
		Topology:     ledger.Topology{Replicas: tr.t.Topology.Replicas, Prefill: tr.t.Topology.Prefill, Decode: tr.t.Topology.Decode},
		Workload:     workloadJSON,
		Warmup: ledger.Warmup{WarmupRequests: tr.t.Warmup.Requests, FreshRouter: tr.t.RouterLaunched(),
			WarmupSent: tr.warmup.Sent, WarmupFailed: tr.warmup.Failed, WarmupErrors: countsOf(tr.warmup.ErrorTypes)},
		Window:              tr.seen.Window,
		PolicyDecisions:     tr.seen.PolicyDecisions,
		LoadBalancingEvents: int64(tr.seen.LoadBalancingEvents),
		FinalLoads:          tr.seen.FinalLoads,
		RouterRun: ledger.RouterRun{RunID: tr.runID, RouterRequests: int64(tr.seen.RunRequests),
			RouterPromptTokens: int64(tr.seen.RunPromptTokens), RouterCompletionTokens: int64(tr.seen.RunCompletionTokens)},
		Failure: out.Failure,
	}
	if tr.replayRow != 0 {
		row.PredictedBy = &tr.replayRow
	}
	if r := tr.t.Replicate; r.Group != "" {
		row.Replicate = ledger.Replicate{ReplicateGroup: r.Group, ReplicateIndex: r.Index, Replicates: tr.t.Replicates()}
	}
	if out.Status == ledger.StatusAborted && tr.obs.Err != nil && !errors.Is(tr.obs.Err, context.Canceled) {
		row.Failure = failure.Unknown{Message: tr.obs.Err.Error()}
	}
	if tr.router != nil {
		rc, err := json.Marshal(tr.router.Config)
		if err != nil {
			return ledger.Trial{}, nil, fmt.Errorf("encoding router config: %w", err)
		}
		row.RouterConfig = rc
		row.RouterMetricsURL = tr.router.MetricsURL()
	} else if tr.t.RouterLaunched() {
		// The router never started: record the configuration it was given,
		// so the failed row still says what was attempted.
		rc, err := json.Marshal(tr.t.Router.Config)
		if err != nil {
			return ledger.Trial{}, nil, fmt.Errorf("encoding router config: %w", err)
		}
		row.RouterConfig = rc
	}
	if g := tr.gate; g != nil {
		passed := g.Passed
		row.Gate = ledger.Gate{GatePassed: &passed, GateKLMean: g.KLMean, GateKLMax: g.KLMax, GateKLThreshold: g.KLThreshold}
	}
	var reqs []ledger.Request
	if tr.result != nil {
		if row.Metrics, err = metricsOf(tr.result.Summary); err != nil {
			return ledger.Trial{}, nil, err
		}
		if m := tr.measured; m != nil {
			row.ShedRate = m.shed.Rate()
			return row, nil, nil
		}
		reqs = requestsOf(tr.result.Requests)
		row.ShedRate = ledger.ShedRate(reqs)
		if err := tr.attachReceipts(reqs); err != nil {
			return ledger.Trial{}, nil, err
		}
	}
	return row, reqs, nil
}

// metricsOf copies the driver's summary into the ledger's columns; both use
// vllm bench serve's keys, so the copy goes through them.
func metricsOf(s driver.Summary) (ledger.Metrics, error) {
	var m ledger.Metrics
	b, err := json.Marshal(s)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return ledger.Metrics{}, fmt.Errorf("copying summary to ledger metrics: %w", err)
	}
	return m, nil
}

func requestsOf(recs []driver.RequestRecord) []ledger.Request {
	out := make([]ledger.Request, 0, len(recs))
	for i := range recs {
		out = append(out, requestOf(&recs[i]))
	}
	return out
}

// requestOf is one driver record as the ledger stores it.
func requestOf(r *driver.RequestRecord) ledger.Request {
	q := ledger.Request{
		Index: r.Index, SessionID: r.SessionID, IntendedSendMs: r.IntendedMs, ActualSendMs: r.SendMs,
		TTFTMs: r.TTFTMs, E2ELMs: r.E2ELMs, TPOTMs: r.TPOTMs, ITLs: r.ITLMs,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		Status: ledger.RequestOK, ErrorType: r.ErrorType, Error: r.Error,
	}
	if r.CachedTokens != nil {
		q.CachedTokens = *r.CachedTokens
	}
	if !r.Success {
		q.Status = "failed"
		if r.Status != 0 {
			q.Status = fmt.Sprintf("http_%d", r.Status)
		}
	}
	return q
}

// countsOf is a count map as the ledger stores it; nil stays nil (null).
func countsOf(m map[string]int) ledger.Counts {
	if m == nil {
		return nil
	}
	out := make(ledger.Counts, len(m))
	for k, n := range m {
		out[k] = float64(n)
	}
	return out
}
