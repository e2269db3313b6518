package adapter

import (
	"context"
	"maps"
	"strconv"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/scrape"
)

// drainTimeout bounds the wait for the router's loads to return to 0 after
// the last response: a decrement may trail the client's last byte by a
// scheduling delay, never by more.
const drainTimeout = 5 * time.Second

// observed is what the trial read from the router and the workers.
type observed struct {
	PolicyDecisions     map[string]float64
	LoadBalancingEvents float64
	FinalLoads          map[string]float64
	Window              ledger.Window
	RunRequests         float64
	RunPromptTokens     float64
	RunCompletionTokens float64
}

// observe scrapes the router and the workers after the run, checks the load
// invariant and fills the failure observation.
func (tr *trialRun) observe(ctx context.Context) {
	tr.observeDriver()
	o := &tr.obs
	tr.seen.Window = tr.window.figures()
	// How far simulated engines' steps ended behind their modelled end in
	// the window, relative to the modelled busy time: near 0 on a quiet
	// host, large when the host could not keep the engines on their own
	// clock. Real engines export no lag: nil, never over its bound.
	o.EngineLagRatio = tr.seen.Window.EngineLagRatio
	o.EngineLagRatioLimit = tr.t.Checks.MaxEngineLagRatio
	if tr.opts.EngineLagRatioLimit > 0 {
		o.EngineLagRatioLimit = tr.opts.EngineLagRatioLimit
	}
	if tr.router == nil {
		return
	}
	tr.seen.FinalLoads = tr.drainedLoads(ctx)
	o.RouterLoads = tr.seen.FinalLoads
	fams, err := scrape.Fetch(ctx, tr.routerHTTP(), tr.router.MetricsURL())
	if err != nil {
		tr.log.Warn("scraping router", "err", err)
		return
	}
	tr.seen.PolicyDecisions = fams.By("vllm_router_policy_decisions_total", "worker")
	tr.seen.LoadBalancingEvents = fams.Sum("vllm_router_load_balancing_events_total", nil)
	run := map[string]string{"run_id": tr.runID}
	tr.seen.RunRequests = fams.Sum("vllm_router_run_requests_total", run)
	tr.seen.RunPromptTokens = fams.Sum("vllm_router_run_prompt_tokens_total", run)
	tr.seen.RunCompletionTokens = fams.Sum("vllm_router_run_completion_tokens_total", run)
	o.OpenCircuits = openCircuits(fams)
	o.PoolSize = len(tr.dep.Workers)
}

// drainedLoads polls the router's loads until every one is 0 or the drain
// timeout passes, and returns the last reading.
func (tr *trialRun) drainedLoads(ctx context.Context) map[string]float64 {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last map[string]float64
	for {
		loads, err := routerLoads(ctx, tr.routerHTTP(), tr.router.URL)
		if err == nil {
			last = loads
			if allZero(loads) {
				return loads
			}
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}

func allZero(m map[string]float64) bool {
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

// errorBodies keeps the first parsed error body of each error type: enough
// for the classifier to read retries, pool size, leg and timeout.
func errorBodies(recs []driver.RequestRecord) []failure.ErrorBody {
	seen := map[string]bool{}
	var out []failure.ErrorBody
	for _, r := range recs {
		if len(r.ErrorBody) == 0 || seen[r.ErrorType] {
			continue
		}
		if b, ok := failure.ParseErrorBody(r.Status, r.ErrorBody); ok {
			seen[r.ErrorType] = true
			out = append(out, b)
		}
	}
	return out
}

// observeDriver reads what the driver's summary tells the failure
// classifier: error types and statuses, schedule delay against its limit.
func (tr *trialRun) observeDriver() {
	o := &tr.obs
	if s := tr.result; s != nil {
		o.ErrorTypes = maps.Clone(s.Summary.ErrorsByType)
		o.StatusCounts = map[int]int{}
		for k, n := range s.Summary.ErrorsByStatus {
			if code, err := strconv.Atoi(k); err == nil {
				o.StatusCounts[code] += n
			}
		}
		o.P99ScheduleDelayMs = s.Summary.P99ScheduleDelayMs
		o.MaxScheduleDelayMs = s.Summary.MaxScheduleDelayMs
		o.ScheduleDelayLimitMs = tr.t.Checks.MaxScheduleDelayP99Ms
		if tr.opts.ScheduleDelayLimit > 0 {
			o.ScheduleDelayLimitMs = float64(tr.opts.ScheduleDelayLimit) / float64(time.Millisecond)
		}
		o.ErrorBodies = errorBodies(s.Requests)
		if tr.measured != nil {
			o.ErrorBodies = tr.measured.bodies.list()
		}
	}
}
