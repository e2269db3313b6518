package driver

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
)

// prerenderAhead bounds the bodies rendered ahead of the scheduler: enough
// to cover a burst of due requests, small next to a long run's bodies.
const prerenderAhead = 128

// prerender renders a phase's lazy bodies on its own goroutine, in the
// order the scheduler sends them (intended time, then index), at most
// prerenderAhead ahead. Rendering a 1k-token prompt takes ~0.1 ms; done on
// the scheduler's goroutine it would delay every send behind it.
type prerender struct {
	out      chan rendered
	finished chan struct{}    // closed when the renderer has returned
	got      map[int]rendered // rendered, asked for out of order (not expected)
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

type rendered struct {
	index int
	body  []byte
	err   error
}

// startPrerender starts rendering reqs' lazy bodies; stop ends it.
func startPrerender(ctx context.Context, st *Stream, reqs []Request) *prerender {
	var order []int
	for i := range reqs {
		if reqs[i].lazy {
			order = append(order, i)
		}
	}
	// Lazy requests start their sessions, so they are sent by intended
	// offset and index, the scheduler's heap order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(reqs[a].Offset, reqs[b].Offset) })
	ctx, cancel := context.WithCancel(ctx)
	p := &prerender{out: make(chan rendered, prerenderAhead), finished: make(chan struct{}), got: map[int]rendered{}, stop: cancel}
	p.wg.Go(func() {
		defer close(p.finished)
		for _, i := range order {
			b, err := st.body(&reqs[i])
			select {
			case p.out <- rendered{i, b, err}:
			case <-ctx.Done():
				return
			}
		}
	})
	return p
}

var errNotRendered = errors.New("request body was not rendered (the run was stopping)")

// body returns lazy request i's body, waiting for it if the renderer is
// behind.
func (p *prerender) body(i int) ([]byte, error) {
	for {
		if r, ok := p.got[i]; ok {
			delete(p.got, i)
			return r.body, r.err
		}
		select {
		case r := <-p.out:
			p.got[r.index] = r
		case <-p.finished:
			select {
			case r := <-p.out: // rendered before it returned
				p.got[r.index] = r
			default:
				return nil, errNotRendered
			}
		}
	}
}

// close stops the renderer and waits for it.
func (p *prerender) close() {
	p.stop()
	p.wg.Wait()
}
