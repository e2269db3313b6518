package failure

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Observation is what one trial saw, gathered by the trial runner. Zero
// values mean "not observed".
type Observation struct {
	// RouterStart is set when the router never became live.
	RouterStart *ProcessStart
	// WorkerStartFailures are workers that never became healthy.
	WorkerStartFailures []WorkerStartupFailed
	// WorkerExits are worker processes that exited on their own while the
	// trial ran (teardown and deliberate restarts are not listed).
	WorkerExits []WorkerCrashed
	// ErrorTypes counts failed requests by the router's error type
	// (pool_exhausted, queue_full, …), as the driver broke them down.
	ErrorTypes map[string]int
	// StatusCounts counts failed requests by HTTP status.
	StatusCounts map[int]int
	// ErrorBodies are sample parsed error bodies (at least one per type is
	// enough); they supply retries, pool size, leg, timeout and request id.
	ErrorBodies []ErrorBody
	// OpenCircuits and PoolSize come from the router's metrics at the end
	// of the run (cb_state == 1 count, worker count).
	OpenCircuits int
	PoolSize     int
	// RouterLoads is vllm_router_worker_load per worker after all traffic
	// stopped. Every value must be 0.
	RouterLoads map[string]float64
	// Schedule delay of the driver's sends, open-loop arrivals only, and
	// its bound (0: DefaultScheduleDelayLimitMs).
	P99ScheduleDelayMs   float64
	MaxScheduleDelayMs   float64
	ScheduleDelayLimitMs float64
	// EngineLagRatio is the simulated engines' step lag over their modelled
	// busy time in the measured window; nil when the engines export no lag
	// (real engines). EngineLagRatioLimit bounds it (0: the default).
	EngineLagRatio      *float64
	EngineLagRatioLimit float64
	// Replay pairs the measured figures with the trial's own virtual
	// replay's (ReplayMetrics); nil when no replay ran (not simulated
	// engines, or a trial the virtual clock cannot run). When set, it
	// judges the host instead of the engines' lag (hostRule).
	Replay []ReplayFigure
	// Warmup is what the warm-up did; nil when none ran.
	Warmup *WarmupOutcome
	// Gate is the quality gate's result, nil when no gate ran.
	Gate *QualityGate
	// NotReady is set when the driver's ready check failed.
	NotReady *TargetNotReady
	// ContextLengthExceeded counts requests the engine refused for length
	// (the driver matches each error message with ParseContextLength).
	ContextLengthExceeded int
	// Err is any other error that ended the trial.
	Err error
}

// QualityGate is the gate's verdict and figures.
type QualityGate struct {
	Passed    bool
	KLMean    float64
	KLMax     float64
	Threshold float64
}

// Classify maps an observation to one failure, or nil when nothing failed.
// Rules, first match wins (docs/failures.md explains each):
//
//  1. router did not start                → RouterStartupFailed
//  2. a worker did not start              → WorkerStartupFailed
//  3. a worker process exited             → WorkerCrashed
//  4. a router load is not 0 afterwards   → RouterPolicyInvariant
//  5. warm-up left circuits open          → WarmupCircuitsOpen
//  6. pd_connector_timeout responses      → PDConnectorTimeout
//  7. length refusals (engine's wording)  → ContextLengthExceeded
//  8. saturation responses                → RouterPoolExhausted
//  9. schedule delay over its bound, a    → HostOverloaded
//     figure past its replay's tolerance
//     (or, without a replay, engine lag
//     over its bound)
//
// 10. quality gate failed                 → QualityGateFailed
// 11. any other error or failed request   → Unknown
//
// Worker kinds (2, 3) need evidence from the worker process itself; status
// codes and router error types never produce them, so a saturated pool can
// only ever be RouterPoolExhausted (or Unknown).
func Classify(o Observation) Failure {
	rules := []func(*Observation) Failure{
		routerStartRule, workerStartRule, workerExitRule, notReadyRule, loadInvariantRule, warmupRule,
		pdTimeoutRule, contextLengthRule, saturationRule, hostRule, gateRule, unknownRule,
	}
	for _, rule := range rules {
		if f := rule(&o); f != nil {
			return f
		}
	}
	return nil
}

func routerStartRule(o *Observation) Failure {
	if o.RouterStart == nil {
		return nil
	}
	return o.RouterStart.failure()
}

func workerStartRule(o *Observation) Failure {
	if len(o.WorkerStartFailures) == 0 {
		return nil
	}
	return o.WorkerStartFailures[0]
}

func workerExitRule(o *Observation) Failure {
	if len(o.WorkerExits) == 0 {
		return nil
	}
	return o.WorkerExits[0]
}

func loadInvariantRule(o *Observation) Failure {
	// Report the worst leak; sorted keys keep ties deterministic.
	var worst *RouterPolicyInvariant
	for _, w := range slices.Sorted(maps.Keys(o.RouterLoads)) {
		v := o.RouterLoads[w]
		if v != 0 && (worst == nil || abs(v) > abs(worst.Value)) {
			worst = &RouterPolicyInvariant{Counter: fmt.Sprintf("vllm_router_worker_load{worker=%q}", w), Value: v}
		}
	}
	if worst == nil {
		return nil
	}
	return *worst
}

func pdTimeoutRule(o *Observation) Failure {
	n := o.ErrorTypes[typePDTimeout]
	if n == 0 {
		return nil
	}
	f := PDConnectorTimeout{Count: n}
	if b, ok := o.body(typePDTimeout); ok {
		f.Leg, f.TimeoutSecs, f.RequestID = b.Leg, b.TimeoutSecs, b.RequestID
	}
	return f
}

// Router error types (the router's stable OpenAI error `type`s).
const (
	typePoolExhausted = "pool_exhausted"
	typeQueueFull     = "queue_full"
	typeQueueTimeout  = "queue_timeout"
	typeNoWorkers     = "no_available_workers"
	typePDTimeout     = "pd_connector_timeout"
)

// saturationRule: backpressure refusals and retries spent on a busy pool
// are saturation. no_available_workers counts only while circuits are open
// (they open under load; with none open the workers were unhealthy, which
// rule 9 reports). Untyped 429/503 count only when the router gave no
// typed errors at all (an external router without typed bodies).
func saturationRule(o *Observation) Failure {
	open := o.OpenCircuits
	if b, ok := o.body(typeNoWorkers); ok && b.OpenCircuits > open {
		open = b.OpenCircuits
	}
	if b, ok := o.body(typePoolExhausted); ok && b.OpenCircuits > open {
		open = b.OpenCircuits
	}
	counts := map[string]int{
		typePoolExhausted: o.ErrorTypes[typePoolExhausted],
		typeQueueFull:     o.ErrorTypes[typeQueueFull],
		typeQueueTimeout:  o.ErrorTypes[typeQueueTimeout],
	}
	if open > 0 {
		counts[typeNoWorkers] = o.ErrorTypes[typeNoWorkers]
	}
	if len(o.ErrorTypes) == 0 {
		counts["http_503"] = o.StatusCounts[503]
		counts["http_429"] = o.StatusCounts[429]
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return nil
	}
	// The dominant type names the failure; ties go to the earlier in order.
	dominant := ""
	for _, t := range []string{typePoolExhausted, typeQueueFull, typeQueueTimeout, typeNoWorkers, "http_503", "http_429"} {
		if counts[t] > counts[dominant] {
			dominant = t
		}
	}
	f := RouterPoolExhausted{ErrorType: dominant, Count: total, PoolSize: o.PoolSize, OpenCircuits: open}
	if b, ok := o.body(typePoolExhausted); ok {
		f.Retries = b.Retries
		if b.PoolSize > 0 {
			f.PoolSize = b.PoolSize
		}
	}
	return f
}

func gateRule(o *Observation) Failure {
	if o.Gate == nil || o.Gate.Passed {
		return nil
	}
	return QualityGateFailed{KLMean: o.Gate.KLMean, KLMax: o.Gate.KLMax, Threshold: o.Gate.Threshold}
}

func unknownRule(o *Observation) Failure {
	var parts []string
	if o.Err != nil {
		parts = append(parts, o.Err.Error())
	}
	for _, t := range slices.Sorted(maps.Keys(o.ErrorTypes)) {
		if n := o.ErrorTypes[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", t, n))
		}
	}
	if len(o.ErrorTypes) == 0 {
		for _, s := range slices.Sorted(maps.Keys(o.StatusCounts)) {
			if n := o.StatusCounts[s]; n > 0 {
				parts = append(parts, fmt.Sprintf("HTTP %d ×%d", s, n))
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return Unknown{Message: strings.Join(parts, "; ")}
}

// body returns the first sample body of type t.
func (o *Observation) body(t string) (ErrorBody, bool) {
	for _, b := range o.ErrorBodies {
		if b.Type == t {
			return b, true
		}
	}
	return ErrorBody{}, false
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
