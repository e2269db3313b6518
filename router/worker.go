package router

import (
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Worker is one upstream server (an OpenAI-compatible vLLM endpoint). With
// intra-node data parallelism it is addressed as several ranks, each with its
// own in-flight count; health and the circuit are per worker.
type Worker struct {
	url     string
	base    *url.URL       // url parsed when it has no path, query or user: requests copy it (upstream.go)
	ids     []string       // target ID per rank, for the policies
	ranks   []atomic.Int64 // exact in-flight attempts per rank
	breaker *Breaker
	healthy atomic.Bool
	queue   atomic.Int64 // scraped vllm:num_requests_waiting
	removed atomic.Bool  // left its pool; kept while attempts drain
	// maxBody is the largest request body the worker may accept: one
	// byte less than the smallest it refused with 413 (0: none refused).
	maxBody atomic.Int64
	series  *workerSeries

	// Health-check streaks, under probeMu: the health loop probes, and so
	// does POST /workers.
	probeMu        sync.Mutex
	hcFails, hcOKs int
	// proven is set once a probe succeeded.
	proven atomic.Bool
}

func newWorker(rawURL string, dp int, b *Breaker) *Worker {
	w := &Worker{url: rawURL, ids: make([]string, dp), ranks: make([]atomic.Int64, dp), breaker: b, series: newWorkerSeries(dp)}
	for r := range w.ids {
		w.ids[r] = targetID(rawURL, r, dp)
	}
	// Healthy for a router used without Serve (Handler, the virtual-time
	// path), which runs no health checks; Serve marks workers unhealthy
	// until a probe succeeds.
	w.healthy.Store(true)
	if u, err := url.Parse(rawURL); err == nil && u.Path == "" && u.RawQuery == "" && !u.ForceQuery && u.User == nil && u.Opaque == "" && u.Fragment == "" {
		u.Host = strings.TrimSuffix(u.Host, ":") // as net/http's NewRequest
		w.base = u
	}
	return w
}

// URL is the worker's base URL.
func (w *Worker) URL() string { return w.url }

// Load is the worker's exact in-flight count over all ranks.
func (w *Worker) Load() int64 {
	var n int64
	for i := range w.ranks {
		n += w.ranks[i].Load()
	}
	return n
}

// Healthy reports the active health check's verdict.
func (w *Worker) Healthy() bool { return w.healthy.Load() }

// Breaker is the worker's circuit.
func (w *Worker) Breaker() *Breaker { return w.breaker }

// targetID names one rank for the policies: the URL itself without data
// parallelism, "url@rank" with it (vllm-router's convention).
func targetID(url string, rank, dp int) string {
	if dp == 1 {
		return url
	}
	return url + "@" + strconv.Itoa(rank)
}

// target is one rank of one worker, the unit a policy picks.
type target struct {
	w    *Worker
	rank int
}

func (t target) id() string { return t.w.ids[t.rank] }
