package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

const benchRows = 100_000

// BenchmarkPareto100k is acceptance 5: a front over 100,000 rows. The
// ledger is populated once, in one transaction, with rows shaped like real
// ones: 50 engine configs swept over 4 router policies (so stale marking
// runs on every insert and ~3/4 of the rows end up stale), full router
// JSON, 5% failed rows.
func BenchmarkPareto100k(b *testing.B) {
	l, _ := openTemp(b)
	ctx := context.Background()
	start := time.Now()
	populate(b, l, benchRows)
	populateMs := float64(time.Since(start).Milliseconds())
	q := ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput"}
	run := func(b *testing.B, q ParetoQuery) Front {
		var front Front
		var err error
		for b.Loop() {
			if front, err = l.Pareto(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		return front
	}
	var frontNs float64
	b.Run("front", func(b *testing.B) {
		front := run(b, q)
		frontNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(len(front.Points)), "front_rows")
		b.ReportMetric(populateMs, "populate_ms")
		b.ReportMetric(float64(count(b, l, "SELECT count(*) FROM trials")), "rows")
	})
	// Every ok row back, stale ones too, as --plot needs: the cost of
	// shipping all rows to Go instead of pruning in SQLite.
	b.Run("all_points", func(b *testing.B) {
		all := q
		all.AllPoints = true
		front := run(b, all)
		b.ReportMetric(float64(len(front.Points)), "points")
		if frontNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/frontNs, "x_front_time")
		}
	})
}

func populate(b *testing.B, l *Ledger, n int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	policies := []string{"round_robin", "cache_aware", "power_of_two", "least_loaded"}
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for i := range n {
		engine := i / 2000 % 50 // runs of trials per engine config
		policy := policies[i/500%len(policies)]
		tr := trial(fmt.Sprintf("sweep-%d/%s", engine, policy), fmt.Sprintf(`{"policy":%q,"worker_urls":["http://127.0.0.1:%d","http://127.0.0.1:%d"],
			"cache_threshold":0.3,"balance_abs_threshold":64,"balance_rel_threshold":1.5,"eviction_interval_secs":120,"max_tree_size":67108864,
			"retry":{"max_retries":5,"initial_backoff_ms":50,"max_backoff_ms":30000,"backoff_multiplier":1.5,"jitter_factor":0.2},
			"circuit_breaker":{"failure_threshold":10,"success_threshold":3,"timeout_duration_secs":60},
			"health_check":{"interval_secs":60,"timeout_secs":5,"failure_threshold":3,"success_threshold":2}}`, policy, 4000+i%1000, 5000+i%1000))
		tr.EngineConfig = JSON(fmt.Sprintf(`{"model":"sim-llama-3-8b","max_num_seqs":%d,"max_num_batched_tokens":8192}`, 16+engine))
		tr.Workload = JSON(`{"dataset_name":"prefix_repetition","num_prompts":1000,"request_rate":16,"burstiness":1,"seed":42}`)
		tr.SweepID = fmt.Sprintf("sweep-%d", i/500)
		fillMetrics(&tr.Metrics, rng.Float64()*100)
		tr.P99TTFTMs, tr.OutputThroughput = 50+rng.Float64()*1000, 100+rng.Float64()*5000
		tr.PolicyDecisions = Counts{"http://127.0.0.1:4001": 512, "http://127.0.0.1:4002": 488}
		tr.FinalLoads = Counts{"http://127.0.0.1:4001": 0, "http://127.0.0.1:4002": 0}
		if rng.IntN(20) == 0 {
			tr.Status, tr.Failure = StatusFailed, failureSample()
		}
		row, err := prepare(tr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := record(ctx, tx, row, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
