package cmd

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// `ledger list/pareto --where --bound` take arbitrary strings: each is
// either refused as bad input naming its flag, or becomes a filter the
// ledger runs without error.
func FuzzLedgerFilterFlags(f *testing.F) {
	for _, s := range [][2]string{{"policy=cache_aware", "p99_ttft_ms < 500"}, {"replicas=2", "output_throughput>=1e3"},
		{"policy", "p99_ttft_ms <"}, {"colour=red", "nope < 1"}, {"name=a=b", "p99_ttft_ms <= -inf"}, {"=x", "p99_ttft_ms ≤ 5"}} {
		f.Add(s[0], s[1])
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(f.TempDir(), "ledger.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { l.Close() })
	f.Fuzz(func(t *testing.T, where, bound string) {
		flags := ledgerFilterFlags{where: []string{where}, bounds: []string{bound}}
		filter, err := flags.filter()
		if err != nil {
			var ee *exitError
			named := strings.Contains(err.Error(), "--where") || strings.Contains(err.Error(), "--bound")
			if !errors.As(err, &ee) || ee.code != ExitUsage || !named {
				t.Fatalf("where %q bound %q: %v, want a usage error naming the flag", where, bound, err)
			}
			return
		}
		if _, err := l.List(ctx, filter); err != nil {
			t.Fatalf("where %q bound %q accepted, but the ledger fails: %v", where, bound, err)
		}
	})
}
