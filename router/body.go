package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// bodyBudget bounds the request bytes the router holds at once, over every
// request: a body is reserved before a byte of it is read and released when
// its request ends, so peak body memory stays under max_body_memory however
// many clients upload at once. Reservations are granted in FIFO order; up
// to queue_size requests wait, each for at most queue_timeout_secs.
type bodyBudget struct {
	sem     *semaphore.Weighted
	size    int64
	maxWait int64
	timeout time.Duration

	held    atomic.Int64 // bytes reserved now
	peak    atomic.Int64 // most bytes ever reserved at once
	waiting atomic.Int64 // requests waiting for a reservation
}

func newBodyBudget(size int64, queueSize int, timeout time.Duration) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(size), size: size, maxWait: int64(queueSize), timeout: timeout}
}

// reservation is one request's share of the budget, held by value by the
// request that owns it.
type reservation struct {
	b *bodyBudget
	n int64
}

// reserve waits for n bytes, or explains why not (an *apiError, or
// errClientGone).
func (b *bodyBudget) reserve(ctx context.Context, n int64) (reservation, error) {
	res := reservation{b: b}
	if n == 0 {
		return res, nil
	}
	if b.sem.TryAcquire(n) { // fails while others wait: FIFO is kept
		res.add(n)
		return res, nil
	}
	if b.waiting.Add(1) > b.maxWait {
		b.waiting.Add(-1)
		return reservation{}, b.full()
	}
	qctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	err := b.sem.Acquire(qctx, n)
	b.waiting.Add(-1)
	switch {
	case err == nil:
		res.add(n)
		return res, nil
	case ctx.Err() != nil:
		return reservation{}, errClientGone
	}
	return reservation{}, newAPIError(http.StatusRequestTimeout, ErrTypeQueueTimeout,
		fmt.Sprintf("waited %s for %d bytes of the router's body memory (max_body_memory %d)", b.timeout, n, b.size))
}

func (b *bodyBudget) full() *apiError {
	return newAPIError(http.StatusTooManyRequests, ErrTypeQueueFull,
		fmt.Sprintf("the router's body memory (max_body_memory %d bytes) is taken and its queue is full; retry later", b.size))
}

// grow adds n bytes to the reservation if they are free now.
func (r *reservation) grow(n int64) bool {
	if !r.b.sem.TryAcquire(n) {
		return false
	}
	r.add(n)
	return true
}

func (r *reservation) add(n int64) {
	r.n += n
	held := r.b.held.Add(n)
	for {
		peak := r.b.peak.Load()
		if held <= peak || r.b.peak.CompareAndSwap(peak, held) {
			return
		}
	}
}

// release gives the whole reservation back; later calls (and calls on a
// zero reservation) do nothing.
func (r *reservation) release() {
	if r.n == 0 {
		return
	}
	r.b.held.Add(-r.n)
	r.b.sem.Release(r.n)
	r.n = 0
}

// chunkedStart is the first reservation for a body of unknown length; it
// doubles (without waiting) as the body grows.
const chunkedStart = 64 << 10

// readBody reserves the body's bytes, then reads it within
// body_read_timeout_secs. A body over max_payload_size is 413; one whose
// reservation cannot be had waits like a queued request (429 queue_full,
// 408 queue_timeout). A body without Content-Length grows its reservation
// as it arrives and gets 429 when the budget runs out. The caller releases
// the reservation when the request ends.
func (r *Router) readBody(w http.ResponseWriter, req *http.Request, kind routeKind) (body []byte, res reservation, err error) {
	defer func() {
		if err != nil {
			closeUnread(w, req)
		}
	}()
	limit, learnedFrom := r.payloadLimit()
	cl := req.ContentLength
	if cl > limit {
		return nil, reservation{}, tooLarge(limit, learnedFrom)
	}
	first := r.heldFor(kind, cl)
	if cl < 0 {
		first = min(chunkedStart, limit+1)
	} else if first > r.bodies.size {
		return nil, reservation{}, newAPIError(http.StatusRequestEntityTooLarge, ErrTypePayloadTooLarge,
			fmt.Sprintf("a request body of %d bytes needs %d bytes of the router's body memory here (the body and the "+
				"copies routing makes of it), more than max_body_memory (%d)", cl, first, r.bodies.size))
	}
	if res, err = r.bodies.reserve(req.Context(), first); err != nil {
		return nil, reservation{}, err
	}
	rc := control{w}
	now := time.Now()
	p := pace{rc: rc, start: now, end: now.Add(secs(r.cfg.BodyReadTimeoutSecs)), rate: r.cfg.MinBodyRate}
	p.arm()

	if cl >= 0 {
		body = make([]byte, cl)
		err = p.readFull(req.Body, body)
	} else {
		// The reader holds a copy of p (taking p's address here would move
		// it to the heap for every request).
		pr := &pacedReader{r: req.Body, p: p}
		body, err = readChunked(pr, &res, limit)
		p = pr.p
	}
	if err != nil {
		// The deadline stays: the connection closes after the answer (the
		// rest of the body would be taken for the next request).
		res.release()
		switch {
		case errors.Is(err, errOverLimit):
			return nil, reservation{}, tooLarge(limit, learnedFrom)
		case errors.Is(err, os.ErrDeadlineExceeded) && p.slow():
			return nil, reservation{}, newAPIError(http.StatusRequestTimeout, ErrTypeBodyReadTimeout,
				fmt.Sprintf("request body arrived below min_body_rate (%g bytes/s after the first %ds): %d bytes in %s",
					p.rate, routerconfig.BodyRateGraceSecs, p.n, time.Since(p.start).Round(time.Millisecond)))
		}
		return nil, reservation{}, r.bodyError(err)
	}
	// Cleared once the body is in: an expired deadline would end the
	// front server's watch read and cancel a long response.
	_ = rc.SetReadDeadline(time.Time{})
	if cl < 0 {
		// Now that its length is known, the copies routing makes of a
		// body of unknown length are reserved too, if they are free.
		if more := r.heldFor(kind, int64(len(body))) - res.n; more > 0 && !res.grow(more) {
			res.release()
			closeUnread(w, req)
			return nil, reservation{}, r.bodies.full()
		}
	}
	return body, res, nil
}

// heldFor is the memory a body of n bytes on a route of kind makes the
// router hold: the body itself and, for an inference request, the copies
// routing makes of it — the prompt text a policy reads (at most n bytes)
// and the cache_aware tree's copy of it (at most max_tree_size), and in PD
// mode n each for the parsed fields, a chat body's messages parsed again
// for routing_threshold, the JSON encoder's buffer and the prefill and
// decode bodies (router/pd allocates 4n for a completion body).
func (r *Router) heldFor(kind routeKind, n int64) int64 {
	if kind != kindInference || n <= 0 {
		return n
	}
	held := n
	if r.policyNeeds().Text {
		held += n + min(n, int64(r.cfg.MaxTreeSize))
	}
	if r.pd != nil {
		held += 5 * n
	}
	return held
}

// largeBody is the reservation from which a request's end collects the
// heap and returns it to the OS (releaseBody).
const largeBody = 32 << 20

// releaseBody ends a request's hold on its body memory. After a large
// body the heap is collected and given back to the OS before the budget
// is freed: otherwise the garbage collector's pacing lets the heap grow to
// about twice what is live before it collects, and resident memory stays
// high for minutes after a burst of large requests.
func (r *Router) releaseBody(in *inbound, res *reservation) {
	if res.n >= largeBody {
		in.body, in.policy.Text = nil, ""
		debug.FreeOSMemory()
	}
	res.release()
}

// closeUnread says in the answer to a request whose body was not read that
// the connection closes: the front server closes it after the answer (the
// unread bytes would be taken for the next request), half-closing first so
// the client still hears the answer.
func closeUnread(w http.ResponseWriter, req *http.Request) {
	if req.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

var errOverLimit = errors.New("body over limit")

// readChunked reads a body of unknown length, doubling the buffer and its
// reservation as needed, up to limit bytes.
func readChunked(src io.Reader, res *reservation, limit int64) ([]byte, error) {
	buf := make([]byte, 0, res.n)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, errOverLimit
			}
			next := min(2*int64(cap(buf)), limit+1)
			if !res.grow(next - int64(cap(buf))) {
				return nil, errBudgetFull
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > limit {
				return nil, errOverLimit
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

var errBudgetFull = errors.New("body memory budget full")

func (r *Router) bodyError(err error) *apiError {
	switch {
	case errors.Is(err, errBudgetFull):
		return r.bodies.full()
	case errors.Is(err, os.ErrDeadlineExceeded):
		return newAPIError(http.StatusRequestTimeout, ErrTypeBodyReadTimeout,
			fmt.Sprintf("request body not received within body_read_timeout_secs (%gs)", r.cfg.BodyReadTimeoutSecs))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, "request body shorter than its Content-Length")
	}
	return newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, "reading request body: "+err.Error())
}

// pace moves a body's read deadline as its bytes arrive: the whole body
// within body_read_timeout_secs and, once BodyRateGraceSecs have passed,
// at least min_body_rate bytes per second on average, so a body trickled
// to hold a connection (and its memory) is cut long before the overall
// timeout.
type pace struct {
	rc         control
	start, end time.Time
	rate       float64 // bytes per second; 0: none
	n          int64   // bytes so far
}

// deadline is when the body is too slow, given the bytes so far.
func (p *pace) deadline() time.Time {
	if p.rate <= 0 {
		return p.end
	}
	due := time.Duration(float64(p.n) / p.rate * float64(time.Second))
	d := p.start.Add(max(due, routerconfig.BodyRateGraceSecs*time.Second))
	if d.After(p.end) {
		return p.end
	}
	return d
}

// slow reports whether the deadline in force is the rate's, not the
// overall timeout.
func (p *pace) slow() bool { return p.deadline().Before(p.end) }

func (p *pace) arm() { _ = p.rc.SetReadDeadline(p.deadline()) }

func (p *pace) add(n int) {
	if n > 0 && p.rate > 0 {
		p.n += int64(n)
		p.arm()
	}
}

// readFull is io.ReadFull moving the deadline after each read.
func (p *pace) readFull(src io.Reader, buf []byte) error {
	got := 0
	for got < len(buf) {
		n, err := src.Read(buf[got:])
		got += n
		p.add(n)
		switch {
		case got == len(buf):
			return nil
		case err == io.EOF:
			return io.ErrUnexpectedEOF
		case err != nil:
			return err
		}
	}
	return nil
}

// pacedReader reads a body of unknown length under p.
type pacedReader struct {
	r io.Reader
	p pace
}

func (pr *pacedReader) Read(b []byte) (int, error) {
	n, err := pr.r.Read(b)
	pr.p.add(n)
	return n, err
}
