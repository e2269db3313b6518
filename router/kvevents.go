package router

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/kvsub"
	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// kvFeed is what precise_prefix routes on: the block index and the
// subscribers that fill it from the workers' KV event streams
// (router.kv_events). Without a precise_prefix policy it is empty and
// costs nothing.
type kvFeed struct {
	idx  *policy.BlockIndex
	subs []*kvsub.Subscriber
	ids  []string // target id of each subscriber
}

// newKVFeed builds the index and one subscriber per source and rank; the
// candidates of a worker with data_parallel_size ranks are "url@rank", and
// each follows the batches naming its rank.
func newKVFeed(cfg Config, log *slog.Logger) *kvFeed {
	f := &kvFeed{idx: policy.NewBlockIndex()}
	dp := max(cfg.IntraNodeDataParallelSize, 1)
	for _, s := range cfg.KVEvents {
		for rank := range dp {
			src := kvSource(s.Worker, rank, dp)
			src.Endpoint, src.Replay, src.Topic = s.Endpoint, s.ReplayEndpoint, s.Topic
			f.subs = append(f.subs, kvsub.New(src, f.idx, log))
			f.ids = append(f.ids, src.ID)
		}
	}
	return f
}

// kvSource is the source of worker's rank among dp ranks the router
// addresses: the candidate "url@rank" keeping the batches naming its rank,
// or with one rank the worker's every batch.
func kvSource(worker string, rank, dp int) kvsub.Source {
	src := kvsub.Source{ID: targetID(worker, rank, dp)}
	if dp > 1 {
		src.Rank = &rank
	}
	return src
}

// run starts the subscribers, owned by wg, until ctx is done.
func (f *kvFeed) run(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger) {
	for i, s := range f.subs {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				log.Error("kv events subscription stopped", "worker", f.ids[i], "err", err)
			}
		})
	}
}

// kvCollector exports the subscribers' counts and the index's state.
type kvCollector struct {
	f                                       *kvFeed
	batches, gaps, replayed, lost, restarts *prometheus.Desc
	stale, blocks                           *prometheus.Desc
}

func newKVCollector(f *kvFeed) *kvCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "kv_events", name), help, []string{"worker"}, nil)
	}
	return &kvCollector{f: f,
		batches:  d("batches_total", "KV event batches applied to the block index, live or replayed."),
		gaps:     d("gaps_total", "Sequence gaps seen in the worker's KV event stream (lost messages)."),
		replayed: d("replayed_total", "Gaps repaired from the worker's replay socket."),
		lost:     d("lost_total", "Gaps not repaired: the worker's copy went stale and precise_prefix scores it approximately."),
		restarts: d("restarts_total", "Times the worker's event sequence started over (a new engine: its copy was reset)."),
		stale:    d("stale", "1 while the worker's copy is stale (approximate scoring)."),
		blocks:   d("blocks", "GPU blocks the block index holds for the worker."),
	}
}

func (c *kvCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.batches, c.gaps, c.replayed, c.lost, c.restarts, c.stale, c.blocks} {
		ch <- d
	}
}

func (c *kvCollector) Collect(ch chan<- prometheus.Metric) {
	for i, s := range c.f.subs {
		id, st := c.f.ids[i], s.Stats()
		for d, v := range map[*prometheus.Desc]uint64{c.batches: st.Batches, c.gaps: st.Gaps, c.replayed: st.Replayed, c.lost: st.Lost, c.restarts: st.Restarts} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), id)
		}
		stale := 0.0
		if c.f.idx.Stale(id) {
			stale = 1
		}
		ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, stale, id)
		ch <- prometheus.MustNewConstMetric(c.blocks, prometheus.GaugeValue, float64(c.f.idx.Blocks(id)), id)
	}
}

// KVEventsSource is one worker's KV event stream (router.kv_events).
type KVEventsSource = routerconfig.KVEventsSource

// Scorer is one weighted term of the weighted policy (router.scorers).
type Scorer = routerconfig.Scorer

// WaitKVEvents blocks until the router's subscriber of worker (its
// candidate id) has applied every batch below seq, or ctx is done: a caller
// that knows what a worker published can then rely on the index holding it.
func (r *Router) WaitKVEvents(ctx context.Context, worker string, seq uint64) error {
	for i, id := range r.kv.ids {
		if id == worker {
			return r.kv.subs[i].WaitNext(ctx, seq)
		}
	}
	return fmt.Errorf("kv events: the router follows no stream of %q", worker)
}
