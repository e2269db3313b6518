package adapter

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/scrape"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// staticSpec runs shared-prefix traffic against two static workers the
// test started; the warm-up sends the same groups first, so it alone would
// lift a cumulative hit rate.
const staticSpec = `
name: static-window
seed: 11
target: {kind: static, hardware: test-sim, workers: [%s, %s]}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b}
router: {policy: round_robin}
workload:
  kind: shared_prefix
  num_groups: 4
  prompts_per_group: 6
  system_prompt_len: 256
  question_len: 32
  output_len: 4
  arrival: {kind: poisson, request_rate: 100}
warmup: {requests: 10}
gate: {reference: none}
`

// edgeScrapes records the test's own scrape of every worker at each
// window edge.
type edgeScrapes struct {
	mu   sync.Mutex
	urls []string
	at   map[string][]scrape.Families
}

func (e *edgeScrapes) hook(t *testing.T) func(context.Context, string) {
	return func(ctx context.Context, edge string) {
		var fams []scrape.Families
		for _, u := range e.urls {
			f, err := scrape.Fetch(ctx, http.DefaultClient, u+"/metrics")
			if err != nil {
				t.Errorf("test's own scrape of %s: %v", u, err)
				return
			}
			fams = append(fams, f)
		}
		e.mu.Lock()
		e.at[edge] = fams
		e.mu.Unlock()
	}
}

// rate is Σhits/Σqueries of the workers' counters (one engine: index i;
// all: i < 0), over the window when before is set, else cumulative.
func rate(before, after []scrape.Families, i int) float64 {
	sum := func(fs []scrape.Families, name string) float64 {
		total := 0.0
		for j, f := range fs {
			if i < 0 || i == j {
				total += f.Sum(name, nil)
			}
		}
		return total
	}
	hits, queries := sum(after, hitsSeries), sum(after, queriesSeries)
	if before != nil {
		hits -= sum(before, hitsSeries)
		queries -= sum(before, queriesSeries)
	}
	return hits / queries
}

// Acceptance 11.4: two trials in a row against the same static workers
// record prefix-cache hit rates equal to the workers' counter deltas over
// each measured window, by the test's own scrapes at the window's edges;
// warm-up traffic and the earlier trial do not count.
func TestWindowHitRatesAreCounterDeltasOnStaticWorkers(t *testing.T) {
	t.Parallel()
	urls := []string{simtest.Start(t, sim.Options{}), simtest.Start(t, sim.Options{})}
	r, led := newTestRunner(t)
	e := &edgeScrapes{urls: urls, at: map[string][]scrape.Families{}}
	r.hooks.edge = e.hook(t)
	tr := parseSpec(t, fmt.Sprintf(staticSpec, urls[0], urls[1]))[0]
	ctx := context.Background()
	for run := range 2 {
		out := runOK(t, r, tr)
		row, err := led.Get(ctx, out.RowID)
		if err != nil {
			t.Fatal(err)
		}
		before, after := e.at["begin"], e.at["end"]
		want, cumulative := rate(before, after, -1), rate(nil, after, -1)
		if row.PrefixCacheHitRate == nil || *row.PrefixCacheHitRate != want {
			t.Errorf("run %d: row's hit rate %v, want the window's counter delta %v", run, deref(row.PrefixCacheHitRate), want)
		}
		if want == cumulative {
			t.Errorf("run %d: window rate %v equals the cumulative rate: the test does not tell them apart", run, want)
		}
		if len(row.Engines) != 2 {
			t.Fatalf("run %d: %d per-engine figures, want 2", run, len(row.Engines))
		}
		for i, ef := range row.Engines {
			if ef.Worker != urls[i] || ef.PrefixCacheHitRate == nil || *ef.PrefixCacheHitRate != rate(before, after, i) {
				t.Errorf("run %d: engine %d figures %s %v, want %s %v", run, i, ef.Worker, deref(ef.PrefixCacheHitRate), urls[i], rate(before, after, i))
			}
		}
		checkWindowFigures(t, row)
		t.Logf("run %d: window hit rate %.4f, cumulative %.4f, KV usage peak %.3f mean %.3f, lag ratio %.3f",
			run, want, cumulative, deref(row.KVUsagePeak), deref(row.KVUsageMean), deref(row.EngineLagRatio))
	}
}

// checkWindowFigures checks what a sim worker always exports: preemptions,
// KV usage, the lag ratio and KV transfers (none between collocated
// engines); the warm-up outcome is on the row.
func checkWindowFigures(t *testing.T, row ledger.Trial) {
	t.Helper()
	if row.Preemptions == nil || *row.Preemptions < 0 {
		t.Errorf("preemptions %v, want a count", row.Preemptions)
	}
	for name, v := range map[string]*float64{"kv_usage_peak": row.KVUsagePeak, "kv_usage_mean": row.KVUsageMean} {
		if v == nil || *v < 0 || *v > 1 {
			t.Errorf("%s %v, want a fraction", name, deref(v))
		}
	}
	if row.KVUsageMean != nil && row.KVUsagePeak != nil && *row.KVUsageMean > *row.KVUsagePeak {
		t.Errorf("KV usage mean %v above its peak %v", *row.KVUsageMean, *row.KVUsagePeak)
	}
	if row.EngineLagRatio == nil {
		t.Error("no engine lag ratio from simulated engines")
	}
	if row.KVTransfers == nil || *row.KVTransfers != 0 {
		t.Errorf("kv_transfers %v on collocated engines, want 0", deref(row.KVTransfers))
	}
	if row.WarmupSent != 10 || row.WarmupFailed != 0 {
		t.Errorf("warm-up sent %d failed %d, want 10 and 0", row.WarmupSent, row.WarmupFailed)
	}
}

func deref[T any](v *T) any {
	if v == nil {
		return "NULL"
	}
	return *v
}
