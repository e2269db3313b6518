package driver

import (
	"context"
	"net/http"
	"time"
)

// done reports a finished request to the scheduler.
type done struct {
	index int
	end   time.Duration // offset at which the response ended
	text  string        // the answer, for a multi_turn session's history
}

// wall is a phase's clock in real time. Everything the phase schedules
// happens on the calling goroutine: it sleeps on one timer until the
// earliest request is due, and starts a goroutine per request only when it
// is sent, which sends it over HTTP, measures it and hands it back on a
// channel.
type wall struct {
	ctx    context.Context
	cancel context.CancelFunc
	client *http.Client
	url    string
	now    func() time.Time
	start  time.Time
	done   chan done
	timer  *time.Timer
	limit  <-chan time.Time // the phase's max duration
	// held are answers that reached the scheduler after the run was
	// cancelled: drain hands them over once the phase is stopping.
	held []done
}

// doneBuffer lets that many answers wait for the scheduler before a
// request's goroutine waits to hand its answer over (its end is taken
// before).
const doneBuffer = 256

// runWall runs p over HTTP on the wall clock (now timestamps) and returns
// the clock, whose start and since say when the phase ran. src is read
// ahead (aheadSource) when it is lazy; a source built whole has its
// dropped bodies rendered ahead from st (prerender). The error is the
// source's: the wall clock itself never fails a phase.
func runWall(parent context.Context, p *phase, src reqSource, st *Stream, client *http.Client, url string, now func() time.Time) (*wall, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	p.src = src
	if src.Lazy() {
		a := readAhead(ctx, src)
		defer a.close()
		a.prime()
		p.src = a
	} else {
		p.pre = startPrerender(ctx, st, src)
		defer p.pre.close()
	}
	w := &wall{ctx: ctx, cancel: cancel, client: client, url: url, now: now, done: make(chan done, doneBuffer),
		timer: time.NewTimer(time.Hour)}
	defer w.timer.Stop()
	if p.maxDuration > 0 {
		lt := time.NewTimer(p.maxDuration)
		defer lt.Stop()
		w.limit = lt.C
	}
	w.start = now()
	err := p.run(w)
	if err != nil {
		// The source failed with requests in flight: their goroutines
		// end before the phase does.
		w.drain(p, w.since())
	}
	return w, err
}

func (w *wall) since() time.Duration { return w.now().Sub(w.start) }

func (w *wall) advance(p *phase, due time.Duration, hasDue bool) (time.Duration, bool, error) {
	now := w.since()
	// Nothing is dispatched once ctx has ended: the request would fail
	// inside the client and be recorded as sent although nothing left.
	if hasDue && due <= now {
		return now, w.ctx.Err() != nil, nil
	}
	var wake <-chan time.Time
	if hasDue {
		w.timer.Reset(due - now)
		wake = w.timer.C
	}
	select {
	case d := <-w.done:
		if w.ctx.Err() != nil {
			// A request the cancellation cut short can come back before
			// the scheduler sees ctx end (select picks either when both
			// are ready). Delivered now, its session's later turns would
			// be session_aborted; the stop makes them not_sent, as on the
			// virtual clock, whose drain sees the stop first.
			w.held = append(w.held, d)
			return w.since(), true, nil
		}
		p.delivered(d.index, d.end, d.text)
	case <-wake:
	case <-w.limit:
		return w.since(), true, nil
	case <-w.ctx.Done():
		return w.since(), true, nil
	}
	return w.since(), false, nil
}

func (w *wall) send(p *phase, i int, body []byte, header http.Header, now time.Duration) bool {
	rec := p.recs.at(i)
	p.recs.sentAt(i, ms(now)) // it leaves at now or later
	go func() {
		rctx, cancel := context.WithTimeout(w.ctx, p.cfg.Timeout)
		defer cancel()
		x := do(rctx, w.client, w.url, body, header, w.now)
		end := w.since()
		o := x.outcome(w.start)
		p.measure(rec, &o)
		w.done <- done{index: i, end: end, text: o.text}
	}()
	return true
}

func (w *wall) settle() {}

// drain cancels the requests in flight and waits for them: each comes
// back with its context's error (or its answer, if it came first).
func (w *wall) drain(p *phase, _ time.Duration) {
	w.cancel()
	for _, d := range w.held {
		p.delivered(d.index, d.end, d.text)
	}
	w.held = nil
	for p.inflight > 0 {
		d := <-w.done
		p.delivered(d.index, d.end, d.text)
	}
}

// outcome is the exchange on the clock that started at start.
func (x *exchange) outcome(start time.Time) outcome {
	o := outcome{sent: !x.send.IsZero(), status: x.status, usage: x.usage, text: x.text.String(),
		errType: x.errType, err: x.errMsg, errBody: x.errBody, itls: x.itls, bursts: x.bursts}
	if o.sent {
		o.send = x.send.Sub(start)
	}
	if o.errType == "" {
		o.first, o.last = x.first.Sub(start), x.last.Sub(start)
	}
	return o
}
