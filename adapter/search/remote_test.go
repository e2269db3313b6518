package search_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// shards is a Remote that runs each batch as count workers would, one
// RunShard per index, in this process: the unit test of the batching and
// sharding, without a cluster (target/kubernetes tests the Indexed Job).
type shards struct {
	ts      []trials.Trial
	l       *ledger.Ledger
	count   int
	batches []search.Batch
}

func (s *shards) Run(ctx context.Context, b search.Batch) error {
	s.batches = append(s.batches, b)
	for i := range s.count {
		if err := search.RunShard(ctx, s.ts, search.Shard{Batch: b, Index: i, Count: s.count}, search.Options{Ledger: s.l, Parallel: 1}); err != nil {
			return err
		}
	}
	return nil
}

// A search whose candidates run as 4 shards ranks exactly as the local
// search (same rows, same rounds), under halving and on the grid.
func TestRemoteShardsRankAsLocal(t *testing.T) {
	ctx := context.Background()
	for _, strategy := range []string{"", "  strategy: halving\n  halving: {eta: 3, min_fraction: 0.1111111}"} {
		s, ts := parseSearch(t, strategy)
		open := func(name string) *ledger.Ledger {
			l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), name))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		}
		local, remote := open("local.db"), open("remote.db")
		lrun, _, err := search.Run(ctx, s, ts, search.Options{Ledger: local, Parallel: 2})
		if err != nil {
			t.Fatal(err)
		}
		sh := &shards{ts: ts, l: remote, count: 4}
		rrun, _, err := search.Run(ctx, s, ts, search.Options{Ledger: remote, Remote: sh})
		if err != nil {
			t.Fatal(err)
		}
		lr, rr := search.Rank(s, lrun), search.Rank(s, rrun)
		if len(lr.Top) == 0 || len(lr.Top) != len(rr.Top) {
			t.Fatalf("strategy %q: top %d locally, %d remotely", s.Strategy, len(lr.Top), len(rr.Top))
		}
		for i := range lr.Top {
			l, r := lr.Top[i], rr.Top[i]
			if l.Trial.Name != r.Trial.Name || l.Values["p99_e2el_ms"] != r.Values["p99_e2el_ms"] {
				t.Errorf("strategy %q: #%d locally %s (%v), remotely %s (%v)", s.Strategy, i+1, l.Trial.Name, l.Values["p99_e2el_ms"], r.Trial.Name, r.Values["p99_e2el_ms"])
			}
		}
		lrows, _ := local.List(ctx, ledger.Filter{IncludeVirtual: true, IncludeStale: true})
		rrows, _ := remote.List(ctx, ledger.Filter{IncludeVirtual: true, IncludeStale: true})
		if len(lrows) != len(rrows) {
			t.Errorf("strategy %q: %d rows locally, %d remotely", s.Strategy, len(lrows), len(rrows))
		}
		wantBatches := 1
		if s.Strategy == search.StrategyHalving {
			wantBatches = 3
		}
		if len(sh.batches) != wantBatches || len(sh.batches[0].Names) != 18 {
			t.Errorf("strategy %q: batches %+v, want %d, the first of all 18 candidates", s.Strategy, sh.batches, wantBatches)
		}
	}
}
