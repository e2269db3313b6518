package adapter

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/target/scrape"
)

// kvSampleInterval is how often the workers' KV usage gauge is read during
// the measured window (besides at both edges): often enough for a mean and
// a peak of a window of seconds, rarely enough to cost the host nothing.
const kvSampleInterval = 200 * time.Millisecond

// window snapshots the workers' counters at both edges of the measured
// window and samples their KV usage in between; its figures are the
// differences, so warm-up, gate traffic and earlier trials never count.
type window struct {
	client  *http.Client
	workers []string
	warn    func(msg string, args ...any)

	before, after map[string]scrape.Families
	samples       []kvSample

	stop context.CancelFunc
	wg   sync.WaitGroup
	mu   sync.Mutex // guards samples while the sampler runs
}

// kvSample is one reading of every worker's KV usage (0..1, the mean over
// its ranks); a worker that did not answer is absent.
type kvSample map[string]float64

func newWindow(client *http.Client, workers []string, warn func(string, ...any)) *window {
	return &window{client: client, workers: workers, warn: warn}
}

// begin takes the first snapshot and starts the KV sampler, owned by w
// until end.
func (w *window) begin(ctx context.Context) {
	w.before = w.snapshot(ctx)
	w.addSample(kvOf(w.before))
	sctx, cancel := context.WithCancel(ctx)
	w.stop = cancel
	w.wg.Add(1)
	go w.sample(sctx)
}

// end stops the sampler and takes the last snapshot. Safe to call twice
// and without begin.
func (w *window) end(ctx context.Context) {
	if w.stop == nil || w.after != nil {
		return
	}
	w.stop()
	w.wg.Wait()
	w.after = w.snapshot(ctx)
	w.addSample(kvOf(w.after))
}

func (w *window) sample(ctx context.Context) {
	defer w.wg.Done()
	tick := time.NewTicker(kvSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s := kvSample{}
		for _, u := range w.workers {
			fams, err := scrape.Fetch(ctx, w.client, u+"/metrics")
			if err != nil {
				continue // a missed sample; the edges are scraped again
			}
			if v, ok := gaugeMean(fams, kvUsageSeries); ok {
				s[u] = v
			}
		}
		w.addSample(s)
	}
}

func (w *window) addSample(s kvSample) {
	if len(s) == 0 {
		return
	}
	w.mu.Lock()
	w.samples = append(w.samples, s)
	w.mu.Unlock()
}

// snapshot scrapes every worker; one that does not answer is left out and
// has no figures.
func (w *window) snapshot(ctx context.Context) map[string]scrape.Families {
	out := make(map[string]scrape.Families, len(w.workers))
	for _, u := range w.workers {
		fams, err := scrape.Fetch(ctx, w.client, u+"/metrics")
		if err != nil {
			w.warn("scraping worker", "worker", u, "err", err)
			continue
		}
		out[u] = fams
	}
	return out
}

func kvOf(snap map[string]scrape.Families) kvSample {
	s := kvSample{}
	for u, fams := range snap {
		if v, ok := gaugeMean(fams, kvUsageSeries); ok {
			s[u] = v
		}
	}
	return s
}

// gaugeMean is the mean of a gauge's series (an engine's ranks).
func gaugeMean(f scrape.Families, name string) (float64, bool) {
	fam, ok := f[name]
	if !ok || len(fam.GetMetric()) == 0 {
		return 0, false
	}
	return f.Sum(name, nil) / float64(len(fam.GetMetric())), true
}

// windowHooks connects a window and the warm-up check to the driver: at
// the window's start the router's open circuits are read, so a warm-up
// that broke the pool fails the trial as WarmupCircuitsOpen.
func (tr *trialRun) windowHooks() driver.Window {
	return driver.Window{
		Begin: func(ctx context.Context, wo driver.WarmupOutcome) {
			tr.warmup = wo
			obs := &failure.WarmupOutcome{Sent: wo.Sent, Failed: wo.Failed, ErrorTypes: maps.Clone(wo.ErrorTypes),
				PoolSize: len(tr.dep.Workers)}
			if tr.router != nil {
				if fams, err := scrape.Fetch(ctx, tr.routerHTTP(), tr.router.MetricsURL()); err == nil {
					obs.OpenCircuits = openCircuits(fams)
				} else {
					tr.log.Warn("scraping router after warm-up", "err", err)
				}
			}
			tr.obs.Warmup = obs
			if tr.hooks.edge != nil {
				tr.hooks.edge(ctx, "begin")
			}
			tr.window.begin(ctx)
		},
		End: func(ctx context.Context) {
			tr.window.end(ctx)
			if tr.hooks.edge != nil {
				tr.hooks.edge(ctx, "end")
			}
		},
	}
}

// openCircuits counts the router's workers whose circuit is open.
func openCircuits(fams scrape.Families) int {
	n := 0
	for _, v := range fams.By("vllm_router_cb_state", "worker") {
		if v == 1 {
			n++
		}
	}
	return n
}
