package failure

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(v float64) *float64 { return &v }

func TestClassifyRules(t *testing.T) {
	crash := WorkerCrashed{Worker: "http://127.0.0.1:8001", ExitCode: 137, Signal: "killed"}
	cases := []struct {
		name string
		obs  Observation
		want Failure
	}{
		{"nothing observed", Observation{}, nil},
		{"clean run with a passing gate", Observation{Gate: &QualityGate{Passed: true, KLMean: 0.01}, RouterLoads: map[string]float64{"a": 0}}, nil},
		{"router binary missing", Observation{RouterStart: &ProcessStart{Err: fmt.Errorf("starting: %w", exec.ErrNotFound), ExitCode: -1}},
			RouterStartupFailed{Reason: ReasonBinaryMissing, Detail: "starting: executable file not found in $PATH"}},
		{"router port in use", Observation{RouterStart: &ProcessStart{ExitCode: 1, Stderr: "listen tcp: bind: address already in use"}},
			RouterStartupFailed{Reason: ReasonPortInUse, Detail: "listen tcp: bind: address already in use"}},
		{"router port in use (errno)", Observation{RouterStart: &ProcessStart{Err: syscall.EADDRINUSE, ExitCode: -1}},
			RouterStartupFailed{Reason: ReasonPortInUse, Detail: "address already in use"}},
		{"router bad flag", Observation{RouterStart: &ProcessStart{ExitCode: 2, Stderr: "Error: unknown flag: --polcy"}},
			RouterStartupFailed{Reason: ReasonFlagInvalid, Detail: "Error: unknown flag: --polcy"}},
		{"router liveness timeout", Observation{RouterStart: &ProcessStart{Err: context.DeadlineExceeded, ExitCode: -1}},
			RouterStartupFailed{Reason: ReasonTimeout, Detail: "context deadline exceeded"}},
		{"router exited otherwise", Observation{RouterStart: &ProcessStart{ExitCode: 3, Stderr: "panic: boom"}},
			RouterStartupFailed{Reason: ReasonExited, Detail: "panic: boom"}},
		{"worker did not start", Observation{WorkerStartFailures: []WorkerStartupFailed{{Worker: "w1", Detail: "timeout"}}},
			WorkerStartupFailed{Worker: "w1", Detail: "timeout"}},
		{"worker crashed, pool then saturated: the crash is the cause", Observation{WorkerExits: []WorkerCrashed{crash},
			ErrorTypes: map[string]int{"no_available_workers": 40}, StatusCounts: map[int]int{503: 40}, OpenCircuits: 1}, crash},
		{"load leak after the run", Observation{RouterLoads: map[string]float64{"http://a": 0, "http://b": 2, "http://c": -1}},
			RouterPolicyInvariant{Counter: `vllm_router_worker_load{worker="http://b"}`, Value: 2}},
		{"pd connector timeout", Observation{ErrorTypes: map[string]int{"pd_connector_timeout": 4},
			ErrorBodies: []ErrorBody{{Type: "pd_connector_timeout", Leg: "prefill", TimeoutSecs: 5, RequestID: "r9"}}},
			PDConnectorTimeout{Leg: "prefill", TimeoutSecs: 5, RequestID: "r9", Count: 4}},
		{"pool exhausted with body details", Observation{ErrorTypes: map[string]int{"pool_exhausted": 30, "queue_full": 10},
			StatusCounts: map[int]int{503: 30, 429: 10}, PoolSize: 2,
			ErrorBodies: []ErrorBody{{Type: "pool_exhausted", Retries: 5, PoolSize: 3, OpenCircuits: 2}}},
			RouterPoolExhausted{ErrorType: "pool_exhausted", Count: 40, Retries: 5, PoolSize: 3, OpenCircuits: 2}},
		{"queue full alone", Observation{ErrorTypes: map[string]int{"queue_full": 12}, PoolSize: 2},
			RouterPoolExhausted{ErrorType: "queue_full", Count: 12, PoolSize: 2}},
		{"queue timeout alone", Observation{ErrorTypes: map[string]int{"queue_timeout": 3}},
			RouterPoolExhausted{ErrorType: "queue_timeout", Count: 3}},
		{"503 no workers while circuits opened under load", Observation{ErrorTypes: map[string]int{"no_available_workers": 9},
			StatusCounts: map[int]int{503: 9}, OpenCircuits: 3, PoolSize: 3},
			RouterPoolExhausted{ErrorType: "no_available_workers", Count: 9, PoolSize: 3, OpenCircuits: 3}},
		{"untyped 503s from an external router", Observation{StatusCounts: map[int]int{503: 5, 429: 2}},
			RouterPoolExhausted{ErrorType: "http_503", Count: 7}},
		{"no workers and no open circuits: unhealthy, not saturation", Observation{ErrorTypes: map[string]int{"no_available_workers": 2}},
			Unknown{Message: "no_available_workers ×2"}},
		{"driver late: host overloaded", Observation{P99ScheduleDelayMs: 150, MaxScheduleDelayMs: 400},
			HostOverloaded{Figure: FigureScheduleDelayP99, Value: 150, Bound: DefaultScheduleDelayLimitMs}},
		{"driver within a custom limit", Observation{P99ScheduleDelayMs: 150, ScheduleDelayLimitMs: 200}, nil},
		{"engines behind their clock: host overloaded", Observation{EngineLagRatio: ptr(0.9)},
			HostOverloaded{Figure: FigureEngineLagRatio, Value: 0.9, Bound: DefaultEngineLagRatioLimit}},
		{"engine lag within a custom bound", Observation{EngineLagRatio: ptr(0.9), EngineLagRatioLimit: 1}, nil},
		{"both over: the one furthest over its bound is named", Observation{P99ScheduleDelayMs: 120, EngineLagRatio: ptr(2)},
			HostOverloaded{Figure: FigureEngineLagRatio, Value: 2, Bound: DefaultEngineLagRatioLimit}},
		{"no engine lag measured (real engines): never over", Observation{EngineLagRatioLimit: 0.01}, nil},
		{"warm-up left circuits open", Observation{Warmup: &WarmupOutcome{Sent: 50, Failed: 35, OpenCircuits: 2, PoolSize: 2,
			ErrorTypes: map[string]int{"http_500": 35}}, ErrorTypes: map[string]int{"no_available_workers": 9}, OpenCircuits: 2},
			WarmupCircuitsOpen{OpenCircuits: 2, PoolSize: 2, Sent: 50, Failed: 35, ErrorTypes: map[string]int{"http_500": 35}}},
		{"warm-up failures with circuits closed fail nothing", Observation{Warmup: &WarmupOutcome{Sent: 50, Failed: 3, PoolSize: 2}}, nil},
		{"pool saturation beats driver overload", Observation{ErrorTypes: map[string]int{"queue_full": 1}, P99ScheduleDelayMs: 500},
			RouterPoolExhausted{ErrorType: "queue_full", Count: 1}},
		{"quality gate failed", Observation{Gate: &QualityGate{KLMean: 0.3, KLMax: 0.9, Threshold: 0.1}},
			QualityGateFailed{KLMean: 0.3, KLMax: 0.9, Threshold: 0.1}},
		{"upstream errors are unknown, never a worker failure", Observation{ErrorTypes: map[string]int{"upstream_error": 3, "upstream_timeout": 1}},
			Unknown{Message: "upstream_error ×3; upstream_timeout ×1"}},
		{"other error", Observation{Err: errors.New("scrape failed"), StatusCounts: map[int]int{500: 2}},
			Unknown{Message: "scrape failed; HTTP 500 ×2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.obs)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSaturationIsNeverAWorkerFailure drives every mix of saturation
// signals and checks no worker kind comes out without worker evidence.
func TestSaturationIsNeverAWorkerFailure(t *testing.T) {
	types := []string{"pool_exhausted", "queue_full", "queue_timeout", "no_available_workers"}
	for mask := 1; mask < 1<<len(types); mask++ {
		for _, open := range []int{0, 1, 3} {
			o := Observation{ErrorTypes: map[string]int{}, StatusCounts: map[int]int{}, OpenCircuits: open, PoolSize: 3}
			for i, ty := range types {
				if mask&(1<<i) != 0 {
					o.ErrorTypes[ty] = 10 + i
					o.StatusCounts[503] += 10 + i
				}
			}
			switch f := Classify(o).(type) {
			case WorkerCrashed, WorkerStartupFailed, QualityGateFailed:
				t.Errorf("types %v, open circuits %d: classified as %s", o.ErrorTypes, open, f.Kind())
			case nil:
				t.Errorf("types %v: no failure", o.ErrorTypes)
			}
		}
	}
}

// TestNotReadyComesBeforeRequestRules: a refused ready check means no
// request was measured, so it wins over what the error counts would say.
func TestNotReadyComesBeforeRequestRules(t *testing.T) {
	nr := &TargetNotReady{Status: 404, Type: "NotFoundError", Message: "The model `nosuch` does not exist."}
	got := Classify(Observation{NotReady: nr, StatusCounts: map[int]int{503: 4}})
	if got == nil || got.Kind() != KindTargetNotReady || got.(TargetNotReady).Message != nr.Message {
		t.Fatalf("Classify = %v, want TargetNotReady with the server's message", got)
	}
}
