package driver

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
)

// prerenderAhead bounds the requests rendered ahead of the scheduler (a kept
// stream's bodies, a lazy source's requests): enough to cover a burst of
// due requests, small next to a long run's bodies.
const prerenderAhead = 128

// prerender renders a kept phase's lazy bodies (plan dropped them) on its
// own goroutine, in the order the scheduler sends them (intended time,
// then index), at most prerenderAhead ahead. Rendering a 1k-token prompt
// takes ~0.1 ms; done on the scheduler's goroutine it would delay every
// send behind it.
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

// startPrerender starts rendering the lazy bodies of src, a source built
// whole; stop ends it.
func startPrerender(ctx context.Context, st *Stream, src reqSource) *prerender {
	var order []int
	for i := range src.Len() {
		if src.At(i).lazy {
			order = append(order, i)
		}
	}
	// Lazy requests start their sessions, so they are sent by intended
	// offset and index, the scheduler's heap order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(src.At(a).Offset, src.At(b).Offset) })
	ctx, cancel := context.WithCancel(ctx)
	p := &prerender{out: make(chan rendered, prerenderAhead), finished: make(chan struct{}), got: map[int]rendered{}, stop: cancel}
	p.wg.Go(func() {
		defer close(p.finished)
		for _, i := range order {
			b, err := st.body(src.At(i))
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

// aheadSource reads a lazy source (lazyStream) ahead of the wall clock's
// scheduler on its own goroutine: each request is produced there (its
// body rendered, digested into the stream hash) at most prerenderAhead
// requests ahead, so a send is not delayed by rendering and memory holds
// the window, not the stream. The source is the virtual clock's own: one
// code path produces both clocks' requests.
//
// The embedded source is touched by the producer only until it has
// returned (finished); Next then reads it directly, so a phase that stops
// early (the producer stops with the wall clock's context) still produces
// what its records need. Tokens is the embedded source's: the wall clock
// has no token path, and the source holds no request it handed over. The
// source's Hash is taken once the producer is closed (what it produced
// and no one took was digested as it was produced).
type aheadSource struct {
	reqSource
	out      chan produced
	finished chan struct{}
	primed   chan struct{} // closed once the window is full or the producer returned
	left     *produced     // produced when the producer stopped, never handed over
	over     bool          // the producer has returned and out is empty
	live     map[int]*Request
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// produced is one result of the source's Next, with its request.
type produced struct {
	index int
	ok    bool
	err   error
	req   *Request
}

// readAhead starts producing src's requests ahead; close ends it.
func readAhead(ctx context.Context, src reqSource) *aheadSource {
	ctx, cancel := context.WithCancel(ctx)
	a := &aheadSource{reqSource: src, out: make(chan produced, prerenderAhead), finished: make(chan struct{}),
		primed: make(chan struct{}), live: map[int]*Request{}, stop: cancel}
	a.wg.Go(func() {
		var prime sync.Once
		defer close(a.finished)
		defer prime.Do(func() { close(a.primed) })
		for n := 1; ; n++ {
			p := a.produce()
			select {
			case a.out <- p:
			case <-ctx.Done():
				a.left = &p
				return
			}
			if !p.ok {
				return
			}
			if n == cap(a.out) {
				prime.Do(func() { close(a.primed) })
			}
		}
	})
	return a
}

// prime waits until the window is full (or the source produced all it
// has, or ctx ended), so the phase's first sends, due at its start, are
// not rendered after it, as a kept stream's are rendered before.
func (a *aheadSource) prime() { <-a.primed }

// produce takes the source's next request over from it.
func (a *aheadSource) produce() produced {
	i, ok, err := a.reqSource.Next()
	p := produced{index: i, ok: ok && err == nil, err: err}
	if p.ok {
		p.req = a.reqSource.At(i)
		a.reqSource.Drop(i)
	}
	return p
}

func (a *aheadSource) Next() (int, bool, error) {
	p, taken := a.take()
	if !taken {
		p = a.produce()
	}
	if p.ok {
		a.live[p.index] = p.req
	}
	return p.index, p.ok, p.err
}

// take is the producer's next result, waiting for it; false once the
// producer has returned and nothing it produced is left.
func (a *aheadSource) take() (produced, bool) {
	if !a.over {
		select {
		case p := <-a.out:
			return p, true
		case <-a.finished:
		}
		select {
		case p := <-a.out: // produced before it returned
			return p, true
		default:
			a.over = true
		}
	}
	if p := a.left; p != nil {
		a.left = nil
		return *p, true
	}
	return produced{}, false
}

func (a *aheadSource) At(i int) *Request { return a.live[i] }
func (a *aheadSource) Drop(i int)        { delete(a.live, i) }

// close stops the producer and waits for it.
func (a *aheadSource) close() {
	a.stop()
	a.wg.Wait()
}
