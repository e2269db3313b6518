package ledger

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoinfer/autoinfer/failure"
)

func testEveryColumnRoundTrips(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	in := fullTrial()
	// Prefill and Decode exclude Replicas: the PD row below covers them.
	// PredictedBy links a real row to a virtual one (this one is virtual):
	// TestPredictionPairs round-trips it.
	assertNoZeroFields(t, reflect.ValueOf(in), "Trial", "ID", "EngineHash", "RouterHash", "HardwareHash", "FailureKind", "Stale", "StaleReason", "StaleAt",
		"Prefill", "Decode", "PredictedBy")
	reqs := requests(5, func(i int) float64 { return 10 + float64(i) })
	reqs[4].Status, reqs[4].ErrorType, reqs[4].Error = "error", "pool_exhausted", "503 pool exhausted"
	for i := range reqs {
		reqs[i].Receipt = JSON(fmt.Sprintf(`{"policy":"precise_prefix","worker":"w%d","candidates":[]}`, i))
	}
	assertNoZeroFields(t, reflect.ValueOf(reqs[4]), "Request", "Index")

	rec, err := l.Record(ctx, in, reqs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.ID, want.FailureKind = rec.ID, failure.KindRouterPoolExhausted
	// Times are kept to the microsecond (PostgreSQL's resolution) on both
	// databases; fullTrial's have nanoseconds.
	want.StartedAt, want.FinishedAt = in.StartedAt.Truncate(time.Microsecond), in.FinishedAt.Truncate(time.Microsecond)
	if want.StartedAt.Equal(in.StartedAt) {
		t.Fatal("fullTrial's start has no sub-microsecond part: the truncation goes untested")
	}
	want.EngineHash, want.RouterHash, want.HardwareHash = got.EngineHash, got.RouterHash, got.HardwareHash
	if len(got.EngineHash) != 16 || len(got.RouterHash) != 16 || len(got.HardwareHash) != 16 {
		t.Errorf("hashes %q, %q, %q: want 16 hex digits each", got.EngineHash, got.RouterHash, got.HardwareHash)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b JSON) bool { return string(a) == string(b) })); diff != "" {
		t.Errorf("trial round trip (-want +got):\n%s", diff)
	}
	pd := trial("pd", `{"pd_disaggregation":true,"prefill_policy":"round_robin","decode_policy":"power_of_two"}`)
	pd.Replicas, pd.Prefill, pd.Decode = 0, 2, 6
	pdRec, err := l.Record(ctx, pd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.Get(ctx, pdRec.ID); err != nil || got.Topology != pd.Topology {
		t.Errorf("PD topology: got %+v, %v; want %+v", got.Topology, err, pd.Topology)
	}
	gotReqs, err := l.Requests(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reqs, gotReqs); diff != "" {
		t.Errorf("requests round trip (-want +got):\n%s", diff)
	}
}

// testEveryFailureKindRoundTripsThroughTheLedger stores one row per kind.
func testEveryFailureKindRoundTripsThroughTheLedger(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	fs := []failure.Failure{
		failure.RouterStartupFailed{Reason: failure.ReasonTimeout, Detail: "no liveness after 10s"},
		failure.RouterPoolExhausted{ErrorType: "queue_full", Count: 3, PoolSize: 2},
		failure.PDConnectorTimeout{Leg: "prefill", TimeoutSecs: 5, RequestID: "r1", Count: 1},
		failure.RouterPolicyInvariant{Counter: "vllm_router_worker_load", Value: 1},
		failure.WorkerStartupFailed{Worker: "w", Detail: "exit", ExitCode: 1},
		failure.WorkerCrashed{Worker: "w", ExitCode: 137, Signal: "killed"},
		failure.QualityGateFailed{KLMean: 0.2, KLMax: 0.7, Threshold: 0.1},
		failure.DriverOverloaded{P99ScheduleDelayMs: 200, MaxScheduleDelayMs: 500, ThresholdMs: 100},
		failure.Unknown{Message: "boom"},
		failure.TargetNotReady{Status: 404, Type: "NotFoundError", Message: "The model `nosuch` does not exist."},
		failure.ContextLengthExceeded{Count: 87, MaxModelLen: 8192, Requested: 9000, Status: 400, Message: "This model's maximum context length is 8192 tokens."},
		failure.AssertionViolated{Metric: "p99_ttft_ms", Value: 612.4, Op: "<", Bound: 500},
		failure.BaselineRegressed{Metric: "output_throughput", Value: 80, BaselineRow: 1, BaselineValue: 100, Tolerance: 0.1},
		failure.HostOverloaded{Figure: failure.FigureScheduleDelayP99, Value: 212.5, Bound: 100},
		failure.WarmupCircuitsOpen{OpenCircuits: 2, PoolSize: 2, Sent: 50, Failed: 35, ErrorTypes: map[string]int{"http_500": 35}},
	}
	if len(fs) != len(failure.Kinds()) {
		t.Fatalf("%d cases for %d kinds", len(fs), len(failure.Kinds()))
	}
	for _, f := range fs {
		tr := trial(string(f.Kind()), routerRR)
		tr.Status, tr.Failure = StatusFailed, f
		rec, err := l.Record(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.FailureKind != f.Kind() || !cmp.Equal(got.Failure, f) {
			t.Errorf("%s: got %s %#v", f.Kind(), got.FailureKind, got.Failure)
		}
	}
}

func testRecordRejectsInvalidRows(t *testing.T, be backend) {
	l, _ := be.open(t)
	cases := []struct {
		name   string
		modify func(*Trial)
		want   string
	}{
		{"no name", func(t *Trial) { t.Name = "" }, "name: required"},
		{"bad status", func(t *Trial) { t.Status = "great" }, `status: "great"`},
		{"ok with failure", func(t *Trial) { t.Failure = failure.Unknown{Message: "x"} }, "an ok trial has no failure"},
		{"failed without failure", func(t *Trial) { t.Status = StatusFailed }, "required when status is failed"},
		{"no engine", func(t *Trial) { t.EngineConfig = nil }, "engine_config: required"},
		{"bad engine JSON", func(t *Trial) { t.EngineConfig = JSON(`{"model":`) }, "engine_config:"},
		{"router missing for 2 replicas", func(t *Trial) { t.RouterConfig = nil }, "router_config: required"},
		{"both topologies", func(t *Trial) { t.Prefill, t.Decode = 1, 1 }, "topology:"},
		{"prefill without decode", func(t *Trial) { t.Replicas, t.Prefill = 0, 2 }, "topology:"},
		{"time reversed", func(t *Trial) { t.FinishedAt = t.StartedAt.Add(-1) }, "finished_at:"},
	}
	for _, c := range cases {
		tr := trial("bad", routerRR)
		c.modify(&tr)
		_, err := l.Record(context.Background(), tr, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	one := trial("single", "")
	one.Replicas = 1
	if _, err := l.Record(context.Background(), one, nil); err != nil {
		t.Errorf("one replica without a router: %v", err)
	}
	if n := count(t, l, "SELECT count(*) FROM trials"); n != 1 {
		t.Errorf("%d rows after rejected records, want 1", n)
	}
}

func testGetMissingIsNotFound(t *testing.T, be backend) {
	l, _ := be.open(t)
	if _, err := l.Get(context.Background(), 99); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(99) = %v, want ErrNotFound", err)
	}
}

// Every catalogued metric is a numeric column of the row, so pareto,
// compare and --bound can read what checks can; a new figure needs both
// its column and its catalogue line.
func TestEveryCataloguedMetricIsAColumn(t *testing.T) {
	cols := columns(reflect.TypeFor[Trial]())
	for _, m := range MetricList() {
		if !slices.Contains(cols, m.Name) {
			t.Errorf("metric %s has no column", m.Name)
		}
	}
	// And every summary column is catalogued.
	for _, name := range columns(reflect.TypeFor[Metrics]()) {
		if _, err := LookupMetric(name); err != nil {
			t.Errorf("summary column %s: %v", name, err)
		}
	}
}

func assertNoZeroFields(t *testing.T, v reflect.Value, path string, skip ...string) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if slices.Contains(skip, f.Name) {
			continue
		}
		if f.Anonymous {
			assertNoZeroFields(t, v.Field(i), path+"."+f.Name, skip...)
			continue
		}
		if v.Field(i).IsZero() {
			t.Errorf("%s.%s is zero in the round-trip fixture: give it a value", path, f.Name)
		}
	}
}

func count(t testing.TB, l *Ledger, q string, args ...any) int {
	t.Helper()
	var n int
	if err := l.db.Get(&n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}
