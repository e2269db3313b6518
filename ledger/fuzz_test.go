package ledger

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// --where and --bound values reach SQL: whatever they hold, a filter is
// either refused by name (an unknown key, metric or operator) or runs as a
// valid query — never an SQL error, never a change to the ledger.
func FuzzFilter(f *testing.F) {
	for _, s := range []struct{ key, value, metric, op string }{
		{"policy", "cache_aware", "p99_ttft_ms", "<"}, {"replicas", "2", "output_throughput", ">="},
		{"name", "x' OR '1'='1", "p99_ttft_ms; DROP TABLE trials", "<"}, {"colour", "red", "p99_ttft_ms", "=="},
		{"model", "", "", ""}, {"status", "ok\x00", "mean_ttft_ms", ">"},
	} {
		f.Add(s.key, s.value, s.metric, s.op, 500.0)
	}
	ctx := context.Background()
	l, err := Open(ctx, filepath.Join(f.TempDir(), "ledger.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { l.Close() })
	if _, err := l.Record(ctx, trial("t", routerRR), nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, value, metric, op string, v float64) {
		filter := Filter{Where: map[string]string{key: value}}
		if metric != "" || op != "" {
			filter.Bounds = []Bound{{Metric: metric, Op: op, Value: v}}
		}
		rows, err := l.List(ctx, filter)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "where: unknown key") && !strings.HasPrefix(msg, "bound") {
				t.Fatalf("filter %+v: %v (want a refusal naming the key, metric or operator)", filter, err)
			}
			return
		}
		if len(rows) > 1 {
			t.Fatalf("filter %+v matched %d rows of 1", filter, len(rows))
		}
		all, err := l.List(ctx, Filter{})
		if err != nil || len(all) != 1 {
			t.Fatalf("ledger changed by filter %+v: %d rows, %v", filter, len(all), err)
		}
	})
}
