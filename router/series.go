package router

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// lazySeries is one child of a metric vector, looked up on first use and
// kept: a vector's own lookup hashes every label value and takes a lock on
// each call, and the router counts a few series per request whose labels
// (route, worker) it knows ahead. The child is created when first used, as
// before, so /metrics shows no series that never counted anything.
type lazySeries[M any] struct{ p atomic.Pointer[M] }

func (l *lazySeries[M]) get(lookup func() M) M {
	if m := l.p.Load(); m != nil {
		return *m
	}
	m := lookup()
	l.p.CompareAndSwap(nil, &m)
	return *l.p.Load()
}

// workerSeries are a worker's per-request series.
type workerSeries struct {
	processed        lazySeries[prometheus.Counter]
	success, failure lazySeries[prometheus.Counter]
	decisions        []lazySeries[prometheus.Counter] // per rank, under its pool's policy
}

func newWorkerSeries(ranks int) *workerSeries {
	return &workerSeries{decisions: make([]lazySeries[prometheus.Counter], ranks)}
}

// routeSeries are a route's per-request series.
type routeSeries struct {
	requests lazySeries[prometheus.Counter]
	duration lazySeries[prometheus.Observer]
}
