package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// oneOfEach has every kind with every field set, so a dropped or renamed
// field fails the round trip.
func oneOfEach() []Failure {
	return []Failure{
		RouterStartupFailed{Reason: ReasonPortInUse, Detail: "listen tcp 127.0.0.1:9000: bind: address already in use"},
		RouterPoolExhausted{ErrorType: "pool_exhausted", Count: 17, Retries: 5, PoolSize: 3, OpenCircuits: 2},
		PDConnectorTimeout{Leg: "prefill", TimeoutSecs: 2.5, RequestID: "req-42", Count: 3},
		RouterPolicyInvariant{Counter: `vllm_router_worker_load{worker="http://127.0.0.1:1"}`, Value: 2},
		WorkerStartupFailed{Worker: "http://127.0.0.1:8001", Detail: "health check timed out", ExitCode: 1},
		WorkerCrashed{Worker: "http://127.0.0.1:8002", ExitCode: -1, Signal: "killed"},
		QualityGateFailed{KLMean: 0.02, KLMax: 0.4, Threshold: 0.1},
		DriverOverloaded{P99ScheduleDelayMs: 250, MaxScheduleDelayMs: 900, ThresholdMs: 100},
		Unknown{Message: "upstream_error ×3"},
		AssertionViolated{Metric: "p99_ttft_ms", Value: 612.4, Op: "<", Bound: 500},
		BaselineRegressed{Metric: "output_throughput", Value: 80, BaselineRow: 7, BaselineValue: 100, Tolerance: 0.1},
		TargetNotReady{Status: 404, Type: "NotFoundError", Message: "The model `nosuch` does not exist.", TimedOut: true},
		ContextLengthExceeded{Count: 87, MaxModelLen: 8192, Requested: 9000, Status: 400, Message: "This model's maximum context length is 8192 tokens."},
		HostOverloaded{Figure: FigureEngineLagRatio, Value: 1.73, Bound: 0.5},
		WarmupCircuitsOpen{OpenCircuits: 2, PoolSize: 2, Sent: 50, Failed: 35, ErrorTypes: map[string]int{"http_500": 35}},
	}
}

func TestEveryKindRoundTrips(t *testing.T) {
	seen := map[Kind]bool{}
	for _, f := range oneOfEach() {
		kind, data, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if kind != f.Kind() {
			t.Errorf("Encode kind = %s, want %s", kind, f.Kind())
		}
		got, err := Decode(kind, data)
		if err != nil {
			t.Fatalf("Decode(%s, %s): %v", kind, data, err)
		}
		if diff := cmp.Diff(f, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", kind, diff)
		}
		if got.Error() == "" {
			t.Errorf("%s has an empty message", kind)
		}
		seen[kind] = true
	}
	for _, k := range Kinds() {
		if !seen[k] {
			t.Errorf("kind %s has no round-trip case", k)
		}
	}
}

func TestDecodeRejectsUnknownKindAndToleratesNewFields(t *testing.T) {
	if _, err := Decode("LaserMalfunction", []byte(`{}`)); err == nil {
		t.Error("unknown kind decoded without error")
	}
	f, err := Decode(KindWorkerCrashed, []byte(`{"worker":"w","exit_code":3,"added_later":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if f != (WorkerCrashed{Worker: "w", ExitCode: 3}) {
		t.Errorf("decoded %#v", f)
	}
	if f, err := Decode("", nil); f != nil || err != nil {
		t.Errorf("empty kind = %v, %v; want nil, nil", f, err)
	}
	if _, err := Decode(KindUnknown, []byte(`{"message":`)); err == nil {
		t.Error("truncated JSON decoded without error")
	}
}

func TestParseErrorBody(t *testing.T) {
	cases := []struct {
		name string
		body string
		want ErrorBody
		ok   bool
	}{
		{"pool exhausted, details inside", `{"error":{"message":"m","type":"pool_exhausted","param":null,"code":503,"retries":5,"pool_size":3,"open_circuits":1}}`,
			ErrorBody{Status: 503, Type: "pool_exhausted", Message: "m", Retries: 5, PoolSize: 3, OpenCircuits: 1}, true},
		{"pd timeout, details beside", `{"error":{"message":"m","type":"pd_connector_timeout"},"leg":"prefill","timeout":"30s","request_id":"r1"}`,
			ErrorBody{Status: 503, Type: "pd_connector_timeout", Message: "m", Leg: "prefill", TimeoutSecs: 30, RequestID: "r1"}, true},
		{"not json", `upstream connect error`, ErrorBody{}, false},
		{"no type", `{"error":{"message":"m"}}`, ErrorBody{}, false},
	}
	for _, c := range cases {
		got, ok := ParseErrorBody(503, []byte(c.body))
		if ok != c.ok || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
