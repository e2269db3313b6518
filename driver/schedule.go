package driver

import (
	"container/heap"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// pending is a request waiting for its intended time.
type pending struct {
	index    int
	intended time.Duration
}

// queue orders pending requests by intended time, then index.
type queue []pending

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].intended != q[j].intended {
		return q[i].intended < q[j].intended
	}
	return q[i].index < q[j].index
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(pending)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// done reports a finished request to the scheduler.
type done struct {
	index int
	end   time.Duration // offset at which the response ended
	text  string        // the answer, for a multi_turn session's history
}

// phase sends one list of requests and measures them. Everything it
// schedules happens on the calling goroutine: it keeps a heap of requests by
// intended time, sleeps on one timer until the earliest is due, and starts a
// goroutine per request only when it is sent. Finished requests come back on
// a channel, which frees a concurrency slot and makes a session's next turn
// due think time later.
type phase struct {
	cfg      Config
	client   *http.Client
	url      string
	now      func() time.Time
	render   renderer
	tok      workload.Tokenizer
	reqs     []Request
	st       *Stream // renders lazy bodies
	pre      *prerender
	limit    int
	progress func(Progress)
	name     string
	// done counts the phase's requests answered before it started (the
	// warm-up request that served as the ready check), so progress reads
	// against the count the user asked for.
	answered int
	// maxDuration stops the phase that long after its start (0: never):
	// unsent requests become not_sent, those in flight incomplete.
	maxDuration time.Duration
	// header holds the headers every request of the phase carries.
	header http.Header

	start   time.Time
	records []metrics.RequestRecord
	sent    *sentDigest
	convs   map[int]conversation // multi_turn sessions with actual history, by first-turn index
	next    map[int]int          // turn index → index of the following turn
	done    chan done
	live    *metrics.Live
	// stopping is set once the phase stops early; sessions then end as
	// not_sent instead of session_aborted.
	stopping bool
}

func (p *phase) since() time.Duration { return p.now().Sub(p.start) }

// run sends every request and returns when all have finished (or, after
// ctx ends or maxDuration passes, when those in flight have returned).
func (p *phase) run(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	n := len(p.reqs)
	p.records = make([]metrics.RequestRecord, n)
	p.sent = newSentDigest()
	p.pre = startPrerender(ctx, p.st, p.reqs)
	defer p.pre.close()
	p.convs = map[int]conversation{}
	p.next = map[int]int{}
	p.done = make(chan done, n)
	p.live = metrics.NewLive()
	q := &queue{}
	for i, r := range p.reqs {
		p.records[i] = metrics.RequestRecord{Index: i, SessionID: r.Session, Turn: r.Turn, InputTokens: r.InputTokens}
		if r.Prev < 0 {
			heap.Push(q, pending{index: i, intended: r.Offset})
		} else {
			p.next[r.Prev] = i
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var limit <-chan time.Time
	if p.maxDuration > 0 {
		lt := time.NewTimer(p.maxDuration)
		defer lt.Stop()
		limit = lt.C
	}
	p.start = p.now()
	inflight, finished := 0, 0
	var freedAt time.Duration // when the concurrency cap last stopped being full
	for finished < n {
		now := p.since()
		// Nothing is dispatched once ctx has ended: the request would fail
		// inside the client and be recorded as sent although nothing left.
		for ctx.Err() == nil && q.Len() > 0 && (p.limit == 0 || inflight < p.limit) && (*q)[0].intended <= now {
			it := heap.Pop(q).(pending)
			p.dispatch(ctx, it.index, it.intended, max(it.intended, freedAt))
			inflight++
		}
		var wake <-chan time.Time
		if q.Len() > 0 && (p.limit == 0 || inflight < p.limit) {
			timer.Reset((*q)[0].intended - now)
			wake = timer.C
		}
		select {
		case d := <-p.done:
			if p.limit > 0 && inflight == p.limit {
				freedAt = d.end
			}
			inflight--
			finished += 1 + p.finish(q, d)
		case <-wake:
		case <-limit:
			p.stop(q, inflight, cancel)
			return
		case <-ctx.Done():
			p.stop(q, inflight, cancel)
			return
		}
	}
}

// stop ends the phase early: it cancels the requests in flight and waits
// for them, then marks them incomplete and every request not sent
// not_sent (neither counts as failed: the run, not the server, ended them).
func (p *phase) stop(q *queue, inflight int, cancel context.CancelFunc) {
	p.stopping = true
	cancel()
	for ; inflight > 0; inflight-- {
		p.finish(q, <-p.done)
	}
	p.abandon(q)
	for i := range p.records {
		r := &p.records[i]
		if r.ErrorType != errCancelled {
			continue
		}
		if r.Sent {
			r.ErrorType, r.Error = ErrIncomplete, "in flight when the run stopped: "+r.Error
		} else {
			r.ErrorType = ErrNotSent
		}
	}
}

// dispatch starts request i. A later turn with actual history gets its
// body here, from the session's conversation so far.
func (p *phase) dispatch(ctx context.Context, i int, intended, due time.Duration) {
	r := &p.reqs[i]
	rec := &p.records[i]
	rec.IntendedMs, rec.DueMs = ms(intended), ms(due)
	body, err := r.Body, error(nil)
	if r.lazy {
		body, err = p.pre.body(i)
	}
	if err != nil {
		rec.ErrorType, rec.Error = errStream, err.Error()
		p.done <- done{index: i, end: p.since()}
		return
	}
	if body == nil {
		conv := p.convs[r.Prev]
		delete(p.convs, r.Prev)
		conv.turns = append(conv.turns, r.conv.turns[0])
		b, err := p.render.body(conv, r.MaxTokens)
		if err != nil {
			rec.ErrorType, rec.Error = errStream, err.Error()
			p.done <- done{index: i, end: p.since()}
			return
		}
		body = b
		rec.InputTokens = conv.tokens(p.tok)
		p.convs[i] = conv
	} else if r.conv.turns != nil {
		p.convs[i] = r.conv
	}
	p.sent.add(i, r.Session, body)
	header := p.requestHeader(i)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
		defer cancel()
		x := do(rctx, p.client, p.url, body, header, p.now)
		end := p.since()
		p.measure(rec, x)
		p.done <- done{index: i, end: end, text: x.text.String()}
	}()
}

// requestHeader is request i's headers: the phase's own, its request id,
// session and run id.
func (p *phase) requestHeader(i int) http.Header { return p.headerFor(i, p.reqs[i].Session) }

// headerFor is requestHeader of request i with session value session.
func (p *phase) headerFor(i int, session string) http.Header {
	header := p.header.Clone()
	if p.cfg.Workload.RequestIDPrefix != "" {
		id := p.cfg.Workload.RequestIDPrefix + strconv.Itoa(i)
		if p.name == phaseWarmup {
			id = p.cfg.Workload.RequestIDPrefix + "warmup-" + strconv.Itoa(i)
		}
		header.Set(RequestIDHeader, id)
	}
	if session != "" {
		header.Set(p.cfg.SessionHeader, session)
	}
	if p.cfg.RunIDHeader != NoHeader {
		// Warm-up requests are counted under their own run id, so the
		// router's per-run counts cover exactly the measured requests.
		runID := p.cfg.RunID
		if p.name == phaseWarmup {
			runID += WarmupRunIDSuffix
		}
		header.Set(p.cfg.RunIDHeader, runID)
	}
	return header
}

// measure fills a record from an exchange. It runs on the request's
// goroutine and writes only that request's record.
func (p *phase) measure(rec *metrics.RequestRecord, x *exchange) {
	rec.Sent = !x.send.IsZero()
	if rec.Sent {
		rec.SendMs = ms(x.send.Sub(p.start))
		rec.ScheduleDelayMs = rec.SendMs - rec.DueMs
	}
	rec.Status = x.status
	if x.usage != nil {
		pt := x.usage.PromptTokens
		rec.PromptTokens = &pt
		if d := x.usage.PromptTokensDetails; d != nil {
			ct := d.CachedTokens
			rec.CachedTokens = &ct
		}
	}
	if p.cfg.KeepText {
		rec.GeneratedText = x.text.String()
	}
	if x.errType != "" {
		rec.ErrorType, rec.Error, rec.ErrorBody = x.errType, x.errMsg, x.errBody
		return
	}
	rec.Success = true
	rec.TTFTMs = ms(x.first.Sub(x.send))
	rec.E2ELMs = ms(x.last.Sub(x.send))
	rec.BurstITLs = x.bursts
	rec.ITLMs = make([]float64, len(x.itls))
	for k, d := range x.itls {
		rec.ITLMs[k] = ms(d)
	}
	if x.usage != nil {
		rec.OutputTokens = x.usage.CompletionTokens
	} else {
		rec.OutputTokens = p.tok.Count(x.text.String())
	}
	if rec.OutputTokens > 1 {
		rec.TPOTMs = (rec.E2ELMs - rec.TTFTMs) / float64(rec.OutputTokens-1)
	}
}

// finish handles a finished request on the scheduler goroutine: live
// figures, progress, and the session's next turn (due think time after the
// end, or aborted when this turn failed). It returns how many further
// requests it finished by aborting them.
func (p *phase) finish(q *queue, d done) int {
	rec := &p.records[d.index]
	p.live.Record(rec)
	aborted := 0
	nxt, ok := p.next[d.index]
	if !ok {
		delete(p.convs, d.index) // the session is over
	}
	if ok {
		if rec.Success {
			if c, ok := p.convs[d.index]; ok {
				c.turns = append(c.turns, d.text)
				p.convs[d.index] = c
			}
			heap.Push(q, pending{index: nxt, intended: d.end + p.reqs[nxt].Think})
		} else {
			for i, ok := nxt, true; ok; i, ok = p.next[i] {
				r := &p.records[i]
				r.ErrorType = errSessionAborted
				r.Error = "an earlier turn of the session failed"
				if p.stopping {
					r.ErrorType, r.Error = ErrNotSent, "the run stopped before this turn was sent"
				}
				p.live.Record(r)
				aborted++
			}
		}
	}
	if p.progress != nil {
		s := p.live.Snapshot()
		p.progress(Progress{Phase: p.name, Done: p.answered + s.Completed + s.Failed, Total: p.answered + len(p.reqs), Live: s})
	}
	return aborted
}

// abandon marks every request not yet sent as not_sent, including later
// turns of sessions still waiting.
func (p *phase) abandon(q *queue) {
	mark := func(i int) {
		r := &p.records[i]
		r.ErrorType, r.Error = ErrNotSent, "the run stopped before this request was sent"
	}
	for q.Len() > 0 {
		it := heap.Pop(q).(pending)
		mark(it.index)
		for i, ok := p.next[it.index]; ok; i, ok = p.next[i] {
			mark(i)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
