package driver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// phase sends one list of requests and measures them: the request life
// cycle (send, finish, stop, abandon, measure) written once for both
// clocks. It keeps a heap of requests by intended time and a concurrency
// cap; a finished request frees its slot and makes its session's next turn
// due think time later. How time passes and how a request travels is its
// clock's business: HTTP on the wall clock (wall.go) or a System in virtual
// time (simulate.go).
type phase struct {
	cfg    Config
	render renderer
	tok    workload.Tokenizer
	src    reqSource
	pre    *prerender // renders lazy bodies ahead (wall clock); nil: none
	limit  int
	name   string
	// header holds the headers every request of the phase carries.
	header http.Header
	// maxDuration stops the phase that long after its start (0: never):
	// unsent requests become not_sent, those in flight incomplete.
	maxDuration time.Duration
	// answered counts the phase's requests answered before it started (the
	// warm-up request that served as the ready check), so progress reads
	// against the count the user asked for.
	answered int
	progress func(Progress)
	live     *metrics.Live                // live figures for progress; nil: none
	acc      *metrics.Accumulator         // streams records into the summary; nil: keep them
	sink     func(*metrics.RequestRecord) // with acc: takes each record as it becomes final

	recs  *records
	sent  *sentDigest
	q     minHeap[pending]
	next  map[int]int          // turn index → index of the following turn
	convs map[int]conversation // multi_turn sessions with actual history, by turn index
	// inflight counts requests sent and not answered; finished those
	// answered, refused or aborted.
	inflight, finished int
	freedAt            time.Duration // when the concurrency cap last stopped being full
	// stopping is set once the phase stops early; sessions then end as
	// not_sent instead of session_aborted.
	stopping bool
}

// clock is what differs between the clocks: how the phase waits for its
// next instant and how a request travels.
type clock interface {
	// advance waits for (wall) or jumps to (virtual) the phase's next
	// instant: the earliest of due (when hasDue), an answer reaching the
	// client and any event of the clock's own. It hands the answers of that
	// instant to phase.delivered and returns the instant (since the phase's
	// start); stop is true when the phase must stop there (its context
	// ended or its max duration passed).
	advance(p *phase, due time.Duration, hasDue bool) (now time.Duration, stop bool, err error)
	// send starts request i at now; false when it was refused at once (its
	// record says why).
	send(p *phase, i int, body []byte, header http.Header, now time.Duration) bool
	// settle ends an instant's sends (the virtual system plans its work).
	settle()
	// drain ends the requests in flight when the phase stops at now: each
	// is delivered, or cancelled (phase.cancel) when it has no answer.
	drain(p *phase, now time.Duration)
}

// pending is a request waiting for its intended time.
type pending struct {
	index    int
	intended time.Duration
}

// before orders pending requests by intended time, then index.
func (x pending) before(y pending) bool {
	return x.intended < y.intended || x.intended == y.intended && x.index < y.index
}

// run sends every request on c and returns when all have finished (or,
// once the phase stopped, when every record says how it ended).
func (p *phase) run(c clock) error {
	n := p.src.Len()
	p.recs, p.sent = newRecords(p.src, p.acc, p.sink), newSentDigest()
	p.next, p.convs = map[int]int{}, map[int]conversation{}
	for range n {
		if err := p.pull(); err != nil {
			return err
		}
		if p.src.Lazy() {
			break
		}
	}
	for p.finished < n {
		var due time.Duration
		hasDue := p.q.Len() > 0 && p.free()
		if hasDue {
			due = p.q[0].intended
		}
		now, stop, err := c.advance(p, due, hasDue)
		if err != nil {
			return err
		}
		if stop {
			return p.stop(c, now)
		}
		for p.q.Len() > 0 && p.free() && p.q[0].intended <= now {
			it := p.q.pop()
			if p.src.Lazy() && p.src.At(it.index).Prev < 0 {
				// the source's start queued ahead leaves: queue the next
				if err := p.pull(); err != nil {
					return err
				}
			}
			p.dispatch(c, it, now)
		}
		c.settle()
	}
	return nil
}

// free reports whether the concurrency cap lets another request go.
func (p *phase) free() bool { return p.limit == 0 || p.inflight < p.limit }

// pull queues the source's next request, or notes it as the turn after
// its previous one. A lazy source goes on up to its next session start:
// its starts come in offset order, so the one queued ahead is the earliest
// due, and a session's later turns come (index order) before the next
// session's start.
func (p *phase) pull() error {
	for {
		i, ok, err := p.src.Next()
		if !ok || err != nil {
			return err
		}
		r := p.src.At(i)
		if r.Prev < 0 {
			p.q.push(pending{index: i, intended: r.Offset})
			return nil
		}
		p.next[r.Prev] = i
		if !p.src.Lazy() {
			return nil
		}
	}
}

// dispatch sends request it at now. A later turn with actual history gets
// its body here, from the session's conversation so far.
func (p *phase) dispatch(c clock, it pending, now time.Duration) {
	i := it.index
	rec := p.recs.at(i)
	rec.IntendedMs, rec.DueMs = ms(it.intended), ms(max(it.intended, p.freedAt))
	body, err := p.body(i)
	if err != nil {
		rec.ErrorType, rec.Error = errStream, err.Error()
		p.finished += 1 + p.finish(i, now, "")
		return
	}
	r := p.src.At(i)
	p.sent.add(i, r.Session, sumOf(r, body))
	if !c.send(p, i, body, p.headerFor(i, r.Session), now) {
		p.finished += 1 + p.finish(i, now, "")
		return
	}
	p.inflight++
}

// body is request i's body: kept, rendered again (lazy) or rendered from
// its session's conversation so far (actual history); nil for a token-path
// request held as its prompt's parts (Request.parts).
func (p *phase) body(i int) ([]byte, error) {
	r := p.src.At(i)
	if r.lazy {
		return p.pre.body(i)
	}
	if r.Body != nil || r.parts != nil {
		if r.conv.turns != nil {
			p.convs[i] = r.conv
		}
		return r.Body, nil
	}
	conv := p.convs[r.Prev]
	delete(p.convs, r.Prev)
	conv.turns = append(conv.turns, r.conv.turns[0])
	b, err := p.render.body(conv, r.MaxTokens)
	if err != nil {
		return nil, err
	}
	p.recs.at(i).InputTokens = conv.tokens(p.tok)
	p.convs[i] = conv
	return b, nil
}

// headerFor is request i's headers: the phase's own, its request id,
// session (value session) and run id.
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

// delivered takes request i's answer, which reached the client at end
// (its record is measured): its slot frees and its session goes on.
func (p *phase) delivered(i int, end time.Duration, text string) {
	if p.limit > 0 && p.inflight == p.limit {
		p.freedAt = end
	}
	p.inflight--
	p.finished += 1 + p.finish(i, end, text)
}

// finish ends request i at end: live figures, progress, and the session's
// next turn (due think time after the end, or aborted when this turn
// failed). It returns how many further requests it finished by aborting
// them.
func (p *phase) finish(i int, end time.Duration, text string) int {
	success := p.recs.at(i).Success
	p.count(i, end)
	aborted := 0
	nxt, ok := p.next[i]
	delete(p.next, i) // a long run's links do not pile up
	switch {
	case !ok:
		delete(p.convs, i) // the session is over
	case success:
		if c, ok := p.convs[i]; ok {
			c.turns = append(c.turns, text)
			p.convs[i] = c
		}
		p.q.push(pending{index: nxt, intended: end + p.src.At(nxt).Think})
	default:
		aborted = p.abort(nxt, end, true)
	}
	if p.progress != nil {
		s := p.live.Snapshot()
		p.progress(Progress{Phase: p.name, Done: p.answered + s.Completed + s.Failed, Total: p.answered + p.src.Len(), Live: s})
	}
	return aborted
}

// count makes request i's record final at end.
func (p *phase) count(i int, end time.Duration) {
	if p.live != nil {
		p.live.Record(p.recs.at(i))
	}
	p.recs.done(i, ms(end))
}

// abort ends a session from turn first on, after an earlier turn failed
// (or the phase stopped): session_aborted, or not_sent once stopping.
// With final, each record is counted at end.
func (p *phase) abort(first int, end time.Duration, final bool) int {
	n := 0
	for i, ok := first, true; ok; n++ {
		r := p.recs.at(i)
		r.ErrorType, r.Error = errSessionAborted, "an earlier turn of the session failed"
		if p.stopping {
			r.ErrorType, r.Error = ErrNotSent, "the run stopped before this turn was sent"
		}
		if final {
			p.count(i, end)
		}
		nxt, more := p.next[i]
		delete(p.next, i)
		i, ok = nxt, more
	}
	return n
}

// cancel ends request i, in flight without an answer when the phase
// stopped, as the wall clock's cancelled request ends: it is incomplete
// and its session's later turns are not sent. A record that already says
// how it failed keeps that.
func (p *phase) cancel(i int) {
	if r := p.recs.at(i); r.ErrorType == "" {
		r.ErrorType = errCancelled
	}
	if nxt, ok := p.next[i]; ok {
		p.abort(nxt, 0, false)
	}
}

// stop ends the phase early at now: the clock ends the requests in flight,
// then every request not sent is not_sent and every one cut short
// incomplete (neither counts as failed: the run, not the server, ended
// them).
func (p *phase) stop(c clock, now time.Duration) error {
	p.stopping = true
	c.drain(p, now)
	for p.q.Len() > 0 {
		it := p.q.pop()
		for i, ok := it.index, true; ok; i, ok = p.next[i] {
			r := p.recs.at(i)
			r.ErrorType, r.Error = ErrNotSent, "the run stopped before this request was sent"
		}
	}
	return p.recs.each(func(i int, r *metrics.RequestRecord) {
		switch {
		case r.ErrorType == errCancelled && r.Sent:
			msg := "in flight when the run stopped"
			if r.Error != "" {
				msg += ": " + r.Error
			}
			r.ErrorType, r.Error = ErrIncomplete, msg
		case r.ErrorType == errCancelled:
			r.ErrorType = ErrNotSent
		case !r.Sent && r.ErrorType == "" && !r.Success:
			// never produced or queued (a lazy source's later requests)
			r.ErrorType, r.Error = ErrNotSent, "the run stopped before this request was sent"
		}
		p.recs.done(i, ms(now))
	})
}

// outcome is what the client saw of one request, on the phase's clock
// (offsets from its start): an HTTP exchange (wall clock) or a system's
// answer (virtual).
type outcome struct {
	sent         bool
	send         time.Duration
	status       int
	usage        *usage
	text         string
	errType, err string
	errBody      []byte
	first, last  time.Duration
	itls         []time.Duration // the gaps between events, as read
	tokens       []time.Duration // or the events' times, gaps derived
	bursts       int
}

// markSent records that rec left at send.
func markSent(rec *metrics.RequestRecord, send time.Duration) {
	rec.Sent, rec.SendMs = true, ms(send)
	rec.ScheduleDelayMs = rec.SendMs - rec.DueMs
}

// measure fills a record from an outcome: vllm bench serve's definitions,
// the same under either clock. On the wall clock it runs on the request's
// goroutine and writes only that request's record.
func (p *phase) measure(rec *metrics.RequestRecord, o *outcome) {
	if o.sent {
		markSent(rec, o.send)
	}
	rec.Status = o.status
	if o.usage != nil {
		pt := o.usage.PromptTokens
		rec.PromptTokens = &pt
		if d := o.usage.PromptTokensDetails; d != nil {
			ct := d.CachedTokens
			rec.CachedTokens = &ct
		}
	}
	if p.cfg.KeepText {
		rec.GeneratedText = o.text
	}
	if o.errType != "" {
		rec.ErrorType, rec.Error, rec.ErrorBody = o.errType, o.err, o.errBody
		return
	}
	rec.Success = true
	rec.TTFTMs = ms(o.first - o.send)
	rec.E2ELMs = ms(o.last - o.send)
	rec.BurstITLs = o.bursts
	if o.tokens != nil {
		rec.ITLMs = make([]float64, len(o.tokens)-1)
		for k := range rec.ITLMs {
			rec.ITLMs[k] = ms(o.tokens[k+1] - o.tokens[k])
		}
	} else {
		rec.ITLMs = make([]float64, len(o.itls))
		for k, d := range o.itls {
			rec.ITLMs[k] = ms(d)
		}
	}
	if o.usage != nil {
		rec.OutputTokens = o.usage.CompletionTokens
	} else {
		rec.OutputTokens = p.tok.Count(o.text)
	}
	if rec.OutputTokens > 1 {
		rec.TPOTMs = (rec.E2ELMs - rec.TTFTMs) / float64(rec.OutputTokens-1)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
