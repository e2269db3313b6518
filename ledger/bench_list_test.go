package ledger

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkListPage1M measures `ledger list --bound 'p99_ttft_ms < 500'` on
// a ledger of 1,000,000 rows: the default page (the newest 50 matching rows)
// and the streamed --all scan, whose live heap must not grow with the row
// count (Each holds one row at a time). Run with -benchtime 1x; populating
// takes a minute.
func BenchmarkListPage1M(b *testing.B) {
	l, _ := openTemp(b)
	ctx := context.Background()
	populate(b, l, 1_000_000)
	bound := []Bound{{Metric: "p99_ttft_ms", Op: "<", Value: 500}}
	b.Run("default_page", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = 0
			if err := l.Each(ctx, Filter{Bounds: bound, Limit: 50, IncludeStale: true}, func(Trial) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n), "rows")
	})
	b.Run("all_streamed", func(b *testing.B) {
		var n int
		var peak uint64
		for b.Loop() {
			n = 0
			var ms runtime.MemStats
			err := l.Each(ctx, Filter{Bounds: bound, IncludeStale: true}, func(Trial) error {
				if n++; n%50_000 == 0 {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n), "rows")
		b.ReportMetric(float64(peak)/(1<<20), "peak_live_heap_MB")
	})
}
