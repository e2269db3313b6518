package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/failure"
)

const (
	engineA  = `{"model":"sim-llama-3-8b","max_num_seqs":64,"enable_prefix_caching":true}`
	routerRR = `{"policy":"round_robin","worker_urls":["http://127.0.0.1:4001","http://127.0.0.1:4002"],"retry":{"max_retries":5}}`
	routerCA = `{"policy":"cache_aware","cache_threshold":0.3,"worker_urls":["http://127.0.0.1:5001","http://127.0.0.1:5002"],"retry":{"max_retries":5}}`
)

func openTemp(t testing.TB) (*Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// trial is a minimal valid ok row: two replicas behind a router.
func trial(name, router string) Trial {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return Trial{
		Name: name, Status: StatusOK, StartedAt: start, FinishedAt: start.Add(time.Minute),
		EngineConfig: JSON(engineA), Topology: Topology{Replicas: 2}, RouterConfig: JSON(router),
		Identity: simIdentity("fast"),
	}
}

// simIdentity is the identity of a sim row on the named profile.
func simIdentity(profile string) Identity {
	return Identity{TargetKind: "sim", Hardware: profile, HardwareConfig: JSON(`{"name":"` + profile + `","step_base_ms":1}`),
		Model: "sim-llama-3-8b", WorkloadHash: "w1", SLO: JSON(`{"ttft_ms":200}`)}
}

// virtualIdentity is simIdentity measured on the virtual clock.
func virtualIdentity(profile string) Identity {
	id := simIdentity(profile)
	id.Clock = ClockVirtual
	return id
}

// fullTrial sets every field, so a column that is not written or read
// back fails the round trip.
func fullTrial() Trial {
	start := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	passed := true
	t := Trial{
		Name: "full", SweepID: "sweep-1", Status: StatusFailed, StartedAt: start, FinishedAt: start.Add(90 * time.Second),
		Seed: 42, SpecHash: "spec123", Identity: virtualIdentity("h100-llama3-8b"), EngineConfig: JSON(`{"max_num_seqs":64,"model":"sim-llama-3-8b"}`),
		Topology: Topology{Replicas: 3}, RouterConfig: JSON(`{"policy":"cache_aware","cache_threshold":0.3}`),
		Workload: JSON(`{"dataset_name":"random","num_prompts":100,"request_rate":8}`),
		Warmup: Warmup{WarmupRequests: 100, FreshRouter: true, WarmupSent: 100, WarmupFailed: 3,
			WarmupErrors: Counts{"http_500": 3}},
		Window: Window{
			Figures: Figures{PrefixCacheHitRate: ptr(0.61), Preemptions: ptr[int64](4), KVTransfers: ptr[int64](90),
				KVTransferFailures: ptr[int64](2), KVUsagePeak: ptr(0.93), KVUsageMean: ptr(0.41), CPUTierHits: ptr[int64](5120),
				AllTiersHitRate: ptr(0.74),
				EngineLagRatio:  ptr(0.03)},
			Engines: EngineFigures{{Worker: "http://127.0.0.1:4001", Figures: Figures{PrefixCacheHitRate: ptr(0.7), Preemptions: ptr[int64](4)}},
				{Worker: "http://127.0.0.1:4002", Figures: Figures{PrefixCacheHitRate: ptr(0.5)}}},
		},
		Gate:                Gate{GatePassed: &passed, GateKLMean: 0.01, GateKLMax: 0.05, GateKLThreshold: 0.1},
		RouterMetricsURL:    "http://127.0.0.1:29000/metrics",
		PolicyDecisions:     Counts{"http://127.0.0.1:4001": 60, "http://127.0.0.1:4002": 40},
		LoadBalancingEvents: 7,
		RouterRun:           RouterRun{RunID: "full-1", RouterRequests: 110, RouterPromptTokens: 12800, RouterCompletionTokens: 3200},
		FinalLoads:          Counts{"http://127.0.0.1:4001": 0, "http://127.0.0.1:4002": 0},
		ShedRate:            ptr(0.05),
		Replicate:           Replicate{ReplicateGroup: "rg-full", ReplicateIndex: 1, Replicates: 3},
		Failure:             failure.RouterPoolExhausted{ErrorType: "pool_exhausted", Count: 9, Retries: 5, PoolSize: 3, OpenCircuits: 1},
	}
	// Every metric gets a distinct value.
	fillMetrics(&t.Metrics, 1)
	return t
}

func fillMetrics(m *Metrics, base float64) {
	vals := map[string]float64{}
	for i, mt := range MetricList() {
		vals[mt.Name] = base + float64(i) + 0.5
	}
	setMetrics(m, vals)
}

func requests(n int, ttft func(i int) float64) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{
			Index: i, SessionID: fmt.Sprintf("autoinfer-1-%d", i), IntendedSendMs: float64(i) * 10, ActualSendMs: float64(i)*10 + 0.2,
			TTFTMs: ttft(i), E2ELMs: ttft(i) + 100, TPOTMs: ttft(i) / 10, ITLs: Floats{ttft(i) / 10, ttft(i) / 10},
			InputTokens: 128, OutputTokens: 3, CachedTokens: 64, Status: RequestOK,
		}
	}
	return out
}

// setMetrics sets Metrics fields by column name (ints are truncated).
func setMetrics(m *Metrics, vals map[string]float64) {
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		x, ok := vals[v.Type().Field(i).Tag.Get("db")]
		switch {
		case !ok:
		case f.CanInt():
			f.SetInt(int64(x))
		default:
			f.SetFloat(x)
		}
	}
}

func failureSample() failure.Failure {
	return failure.RouterPoolExhausted{ErrorType: "queue_full", Count: 12, PoolSize: 2}
}

func ptr[T any](v T) *T { return &v }
