package failure

import "fmt"

// Kind is a failure's stable name. Names never change once released: the
// ledger stores them and users query them.
type Kind string

// The closed set of kinds.
const (
	KindRouterStartupFailed   Kind = "RouterStartupFailed"
	KindRouterPoolExhausted   Kind = "RouterPoolExhausted"
	KindPDConnectorTimeout    Kind = "PDConnectorTimeout"
	KindRouterPolicyInvariant Kind = "RouterPolicyInvariant"
	KindWorkerStartupFailed   Kind = "WorkerStartupFailed"
	KindWorkerCrashed         Kind = "WorkerCrashed"
	KindQualityGateFailed     Kind = "QualityGateFailed"
	KindDriverOverloaded      Kind = "DriverOverloaded"
	KindUnknown               Kind = "Unknown"
)

// Kinds lists every kind: the classified ones in precedence order with
// Unknown last among them, then the kinds of the trial's own checks, which
// apply only to a trial nothing else failed, then retired kinds that are
// no longer produced but still decoded from older rows.
func Kinds() []Kind {
	return []Kind{
		KindRouterStartupFailed, KindWorkerStartupFailed, KindWorkerCrashed, KindTargetNotReady, KindRouterPolicyInvariant,
		KindWarmupCircuitsOpen, KindPDConnectorTimeout, KindContextLengthExceeded, KindRouterPoolExhausted,
		KindHostOverloaded, KindQualityGateFailed, KindUnknown, KindAssertionViolated, KindBaselineRegressed,
		KindDriverOverloaded,
	}
}

// Failure is one typed trial failure. Error gives a one-line human summary.
type Failure interface {
	error
	Kind() Kind
}

// StartupReason says why the router did not start.
type StartupReason string

// Router startup reasons.
const (
	ReasonBinaryMissing StartupReason = "binary_missing"
	ReasonPortInUse     StartupReason = "port_in_use"
	ReasonFlagInvalid   StartupReason = "flag_invalid"
	ReasonTimeout       StartupReason = "timeout"
	// ReasonExited: the process exited before it was live for a reason none
	// of the above explains; Detail holds its exit status and stderr tail.
	ReasonExited StartupReason = "exited"
)

// RouterStartupFailed means the router never became live.
type RouterStartupFailed struct {
	Reason StartupReason `json:"reason"`
	Detail string        `json:"detail,omitempty"`
}

// RouterPoolExhausted means the pool was saturated — requests were refused by
// backpressure (queue_full, queue_timeout) or ran out of retries while every
// worker was busy or had its circuit open (pool_exhausted, 503). This is a
// capacity result about the deployment under this load, not a broken worker.
type RouterPoolExhausted struct {
	// ErrorType is the router error type that dominated (pool_exhausted,
	// queue_full, queue_timeout, no_available_workers, or http_503/http_429
	// when the router gave no typed body).
	ErrorType    string `json:"error_type"`
	Count        int    `json:"count"`
	Retries      int    `json:"retries"`
	PoolSize     int    `json:"pool_size"`
	OpenCircuits int    `json:"open_circuits"`
}

// PDConnectorTimeout means a prefill/decode KV transfer leg did not finish in time.
type PDConnectorTimeout struct {
	Leg         string  `json:"leg"`
	TimeoutSecs float64 `json:"timeout_secs"`
	RequestID   string  `json:"request_id"`
	Count       int     `json:"count"`
}

// RouterPolicyInvariant means a router counter broke an invariant, e.g. a worker
// load that is not 0 after all traffic stopped.
type RouterPolicyInvariant struct {
	Counter string  `json:"counter"`
	Value   float64 `json:"value"`
}

// WorkerStartupFailed means a worker never became healthy.
type WorkerStartupFailed struct {
	Worker   string `json:"worker"`
	Detail   string `json:"detail,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	// LogTail is the end of the worker's output (LogTail bounds it) when
	// the target captured it: a process's log, a container's termination
	// message.
	LogTail string `json:"log_tail,omitempty"`
}

// WorkerCrashed means a worker process exited while the trial ran.
type WorkerCrashed struct {
	Worker   string `json:"worker"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// LogTail is the end of the worker's output, as for
	// WorkerStartupFailed.
	LogTail string `json:"log_tail,omitempty"`
}

// QualityGateFailed means the deployment's outputs diverged from the reference.
type QualityGateFailed struct {
	KLMean    float64 `json:"kl_mean"`
	KLMax     float64 `json:"kl_max"`
	Threshold float64 `json:"threshold"`
}

// DriverOverloaded means the client could not send on schedule, so the numbers
// measure the client rather than the deployment. Retired: rows written
// since HostOverloaded existed say HostOverloaded{figure:
// schedule_delay_p99_ms}; this type remains so older rows still decode.
type DriverOverloaded struct {
	P99ScheduleDelayMs float64 `json:"p99_schedule_delay_ms"`
	MaxScheduleDelayMs float64 `json:"max_schedule_delay_ms"`
	ThresholdMs        float64 `json:"threshold_ms"`
}

// Unknown means the trial failed in a way no rule recognises.
type Unknown struct {
	Message string `json:"message"`
}

// Kind implements Failure.
func (RouterStartupFailed) Kind() Kind { return KindRouterStartupFailed }

// Kind implements Failure.
func (RouterPoolExhausted) Kind() Kind { return KindRouterPoolExhausted }

// Kind implements Failure.
func (PDConnectorTimeout) Kind() Kind { return KindPDConnectorTimeout }

// Kind implements Failure.
func (RouterPolicyInvariant) Kind() Kind { return KindRouterPolicyInvariant }

// Kind implements Failure.
func (WorkerStartupFailed) Kind() Kind { return KindWorkerStartupFailed }

// Kind implements Failure.
func (WorkerCrashed) Kind() Kind { return KindWorkerCrashed }

// Kind implements Failure.
func (QualityGateFailed) Kind() Kind { return KindQualityGateFailed }

// Kind implements Failure.
func (DriverOverloaded) Kind() Kind { return KindDriverOverloaded }

// Kind implements Failure.
func (Unknown) Kind() Kind { return KindUnknown }

func (f RouterStartupFailed) Error() string {
	return fmt.Sprintf("router did not start (%s): %s", f.Reason, f.Detail)
}

func (f RouterPoolExhausted) Error() string {
	return fmt.Sprintf("router pool exhausted: %d× %s (retries %d, pool size %d, open circuits %d)",
		f.Count, f.ErrorType, f.Retries, f.PoolSize, f.OpenCircuits)
}

func (f PDConnectorTimeout) Error() string {
	return fmt.Sprintf("PD connector %s leg timed out after %gs (request %s, %d in total)",
		f.Leg, f.TimeoutSecs, f.RequestID, f.Count)
}

func (f RouterPolicyInvariant) Error() string {
	return fmt.Sprintf("router invariant broken: %s = %g", f.Counter, f.Value)
}

func (f WorkerStartupFailed) Error() string {
	return withLogTail(fmt.Sprintf("worker %s did not start: %s", f.Worker, f.Detail), f.LogTail)
}

func (f WorkerCrashed) Error() string {
	if f.Signal != "" {
		return withLogTail(fmt.Sprintf("worker %s crashed: %s", f.Worker, f.Signal), f.LogTail)
	}
	return withLogTail(fmt.Sprintf("worker %s crashed: exit status %d", f.Worker, f.ExitCode), f.LogTail)
}

func (f QualityGateFailed) Error() string {
	return fmt.Sprintf("quality gate failed: KL mean %g, max %g > threshold %g", f.KLMean, f.KLMax, f.Threshold)
}

func (f DriverOverloaded) Error() string {
	return fmt.Sprintf("driver overloaded: p99 schedule delay %gms (max %gms) > %gms",
		f.P99ScheduleDelayMs, f.MaxScheduleDelayMs, f.ThresholdMs)
}

func (f Unknown) Error() string { return "trial failed: " + f.Message }
