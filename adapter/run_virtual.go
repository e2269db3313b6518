package adapter

import (
	"context"
	"fmt"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
)

// executeVirtual runs the trial on the virtual clock (clock: virtual): the
// same driver stream through the router's own decision code into the
// simulated engines' schedulers, in this goroutine, with no HTTP and no
// waiting. No quality gate runs (the row's gate columns stay empty) and no
// worker is scraped: the window figures (prefix-cache hit rate,
// preemptions, KV usage, CPU-tier hits) are the simulated engines' own
// counts over the measured phase. The router's exact loads after the run
// must be zero, as in real time.
func (tr *trialRun) executeVirtual(ctx context.Context) {
	dep, err := virtual.FromTrial(tr.t)
	if err != nil {
		tr.obs.Err = err
		return
	}
	tr.log.Info("running on the virtual clock", "trial", tr.t.Name, "target", tr.t.Target.Kind)
	var decisions []virtual.Decision
	// Receipts go on the request records, which a streamed run keeps none of.
	receipts := !tr.opts.StreamVirtual
	if receipts {
		dep.RecordReceipts()
	}
	if tr.opts.Decisions != nil || receipts {
		dep.RecordDecisions(func(d virtual.Decision) { decisions = append(decisions, d) })
	}
	res, err := driver.SimulateWith(ctx, tr.driverConfig(virtual.BaseURL), dep,
		driver.SimOptions{Stream: tr.opts.StreamVirtual, ExactValues: SearchExactValues, Workloads: tr.opts.Workloads})
	tr.result = res
	if res != nil {
		tr.warmup = res.Warmup
	}
	if err != nil {
		tr.obs.Err = fmt.Errorf("virtual clock: %w", err)
		return
	}
	if tr.opts.Decisions != nil {
		if err := writeDecisions(tr.opts.Decisions, tr.t.Name, decisions, res); err != nil {
			tr.obs.Err = err
			return
		}
	}
	if receipts {
		tr.receipts = receiptsOf(decisions)
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
