package adapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
)

// DecisionLine is one line of a decision record: the trial and one routing
// decision the router's own code made in it.
type DecisionLine struct {
	Trial string `json:"trial"`
	virtual.Decision
}

// executeVirtual runs the trial on the virtual clock (clock: virtual): the
// same driver stream through the router's own decision code into the
// simulated engines' schedulers, in this goroutine, with no HTTP and no
// waiting. No quality gate runs (the row's gate columns stay empty) and no
// worker is scraped: the window figures are the real-time path's and stay
// NULL. The router's exact loads after the run must be zero, as in real
// time.
func (tr *trialRun) executeVirtual(ctx context.Context) {
	dep, err := virtual.FromTrial(tr.t)
	if err != nil {
		tr.obs.Err = err
		return
	}
	tr.log.Info("running on the virtual clock", "trial", tr.t.Name, "target", tr.t.Target.Kind)
	var logErr error
	if w := tr.opts.Decisions; w != nil {
		enc := json.NewEncoder(w)
		dep.RecordDecisions(func(d virtual.Decision) {
			if logErr == nil {
				logErr = enc.Encode(DecisionLine{Trial: tr.t.Name, Decision: d})
			}
		})
	}
	res, err := driver.SimulateWith(ctx, tr.driverConfig(virtual.BaseURL), dep,
		driver.SimOptions{Stream: tr.opts.StreamVirtual, ExactValues: SearchExactValues})
	tr.result = res
	if res != nil {
		tr.warmup = res.Warmup
	}
	if err != nil {
		tr.obs.Err = fmt.Errorf("virtual clock: %w", err)
		return
	}
	if logErr != nil {
		tr.obs.Err = fmt.Errorf("recording decisions: %w", logErr)
		return
	}
	tr.observeDriver()
	if r := dep.Router(); r != nil {
		loads := map[string]float64{}
		for url, n := range r.Loads() {
			loads[url] = float64(n)
		}
		tr.seen.FinalLoads, tr.obs.RouterLoads = loads, loads
	}
}
