package adapter

import (
	"context"
	"fmt"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/sweep"
)

// executeVirtual runs the trial on the virtual clock (clock: virtual): the
// same driver stream through the router's own decision code into the
// simulated engines' schedulers, in this goroutine, with no HTTP and no
// waiting. No quality gate runs (the row's gate columns stay empty) and no
// worker is scraped: the window figures (prefix-cache hit rate,
// preemptions, KV usage, CPU-tier hits) are the simulated engines' own
// counts over the measured phase. The router's exact loads after the run
// must be zero, as in real time.
//
// The run streams: its records go into the summary as they become final
// and the run keeps none of them, so its memory does not grow with its
// length. A trial's own run spools them for its ledger row (measured);
// a search's keeps none (StreamVirtual: rows without per-request records).
func (tr *trialRun) executeVirtual(ctx context.Context) {
	dep, err := virtual.FromTrial(tr.t)
	if err != nil {
		tr.obs.Err = err
		return
	}
	tr.log.Info("running on the virtual clock", "trial", tr.t.Name, "target", tr.t.Target.Kind)
	opt := driver.SimOptions{Stream: true, ExactValues: SearchExactValues, Workloads: tr.opts.Workloads}
	var decisions *decisionStream
	if !tr.opts.StreamVirtual {
		m, err := newMeasured(tr.t.Name, sweep.Tally{SLO: sweepSLO(tr.t)}, tr.opts.Decisions)
		if err != nil {
			tr.obs.Err = err
			return
		}
		tr.measured, decisions = m, m.decisions
		// Receipts go on the request records, which only a trial's own run keeps.
		m.keepReceipts()
		dep.RecordReceipts()
		dep.RecordDecisions(m.decided)
		opt.Records = m.add
	} else if tr.opts.Decisions != nil {
		decisions = newDecisionStream(tr.opts.Decisions, tr.t.Name)
		dep.RecordDecisions(decisions.add)
	}
	res, err := driver.SimulateWith(ctx, tr.driverConfig(virtual.BaseURL), dep, opt)
	tr.result = res
	if res != nil {
		tr.warmup = res.Warmup
	}
	finished := tr.finishMeasured(decisions)
	if err != nil {
		tr.obs.Err = fmt.Errorf("virtual clock: %w", err)
		return
	}
	if finished != nil {
		tr.obs.Err = finished
		return
	}
	tr.observeDriver()
	tr.seen.Window = virtualFigures(dep.Window())
	if r := dep.Router(); r != nil {
		loads := map[string]float64{}
		for url, n := range r.Loads() {
			loads[url] = float64(n)
		}
		tr.seen.FinalLoads, tr.obs.RouterLoads = loads, loads
	}
}

// finishMeasured writes the decisions still waiting and reports the
// first error of the records' intake.
func (tr *trialRun) finishMeasured(decisions *decisionStream) error {
	if tr.measured == nil && decisions != nil {
		return decisions.close()
	}
	return tr.measured.finish()
}
