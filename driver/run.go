package driver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
)

// Progress is reported after every finished request.
type Progress struct {
	Phase       string // "warmup" or "measured"
	Done, Total int
	Live        metrics.Snapshot
}

// Option adjusts a Run.
type Option func(*options)

type options struct {
	progress     func(Progress)
	now          func() time.Time
	window       Window
	duringWarmup func(context.Context)
	records      func(*RequestRecord)
	exact        int
}

// WithProgress calls fn on the scheduler goroutine after every finished
// request; fn must return quickly.
func WithProgress(fn func(Progress)) Option { return func(o *options) { o.progress = fn } }

// WithDuringWarmup runs fn on its own goroutine alongside the warm-up:
// it starts once the ready check has passed (it does not run when the
// check fails), and the measured run starts
// only after both the warm-up and fn have returned, so nothing fn sends
// overlaps the measured window. Run returns only after fn has; fn's ctx
// ends with Run's. The adapter sends the quality gate's prompts this way.
func WithDuringWarmup(fn func(ctx context.Context)) Option {
	return func(o *options) { o.duringWarmup = fn }
}

// WithRecords streams the measured phase as SimOptions.Stream does: each
// record is counted into the summary when it becomes final, handed to fn
// (on the scheduler goroutine, which it must not hold up; fn must not
// keep the pointer) and dropped, so Result.Requests stays empty and the
// records take no memory. The measured requests are then produced as they
// fall due and dropped with their records (wallStream). Each latency
// metric keeps its values exactly up to exact (0: DefaultExactValues),
// then within metrics.PercentileRelError.
func WithRecords(fn func(*RequestRecord), exact int) Option {
	return func(o *options) { o.records, o.exact = fn, cmp.Or(exact, DefaultExactValues) }
}

// WithClock replaces time.Now for every timestamp the run takes (send
// times, chunk arrivals, the run's start and end). Tests use it to script
// exact chunk times; waiting for an intended send time still uses real
// timers, so a scripted clock suits only rate-inf runs.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Result is a finished run.
type Result struct {
	Summary Summary
	// Requests are the measured requests' records, by index.
	Requests []RequestRecord
	// WarmupFailed counts warm-up requests that failed (they are excluded
	// from every metric, but many failures mean the target was not ready).
	WarmupFailed int
	// Warmup is the warm-up's outcome: sent, failed, failures by type.
	Warmup WarmupOutcome
	// Start is when the measured phase began on the run's clock (zero on
	// the virtual clock): the records' offsets (send_ms) count from it, so
	// Start + send_ms + ttft_ms is when the first token arrived.
	Start time.Time
}

// Run sends cfg's warm-up stream and waits for it, then sends and measures
// the measured stream. If ctx ends first, Run returns what it measured so
// far together with ctx's error.
func Run(ctx context.Context, cfg Config, opts ...Option) (*Result, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	st, src, release, err := wallStream(cfg, o.records != nil)
	if err != nil {
		return nil, err
	}
	defer release()
	return runStream(ctx, cfg.withDefaults(), st, src, o)
}

// runStream is Run of the stream st, whose measured requests src produces.
func runStream(ctx context.Context, cfg Config, st *Stream, src reqSource, o options) (*Result, error) {
	client := cfg.HTTPClient
	if client == nil {
		conns := cfg.Arrival.MaxConcurrency
		if conns == 0 {
			conns = max(src.Len(), len(st.Warmup))
		}
		client = newHTTPClient(min(max(conns, 16), 4096))
		defer client.CloseIdleConnections()
	}
	url := strings.TrimRight(cfg.BaseURL, "/") + cfg.Endpoint
	header := cfg.baseHeader()
	newPhase := func(name string) *phase {
		return &phase{cfg: cfg, header: header, render: st.render, tok: st.tok, limit: cfg.Arrival.MaxConcurrency,
			progress: o.progress, live: metrics.NewLive(), name: name}
	}
	res := &Result{}
	warmup, warmupDone := st.Warmup, 0
	readyStream := closed()
	if cfg.ReadyCheckTimeout > 0 {
		// The first warm-up request doubles as the ready check, so the
		// server sees no request beyond the warm-up and the measured ones.
		ready := st.Ready
		if len(warmup) > 0 {
			ready, warmup, warmupDone = warmup[0], warmup[1:], 1
		}
		rs, err := readyCheck(ctx, cfg, client, url, ready, header.Clone())
		if err != nil {
			return nil, err
		}
		readyStream = rs
	}
	res.Warmup.Sent = warmupDone
	var side sync.WaitGroup
	defer side.Wait()
	if o.duringWarmup != nil {
		side.Go(func() { o.duringWarmup(ctx) })
	}
	if len(warmup) > 0 {
		w := newPhase(phaseWarmup)
		w.answered = warmupDone
		// A warm-up is built whole and kept: its source never fails.
		_, _ = runWall(ctx, w, &sliceSource{reqs: warmup}, st, client, url, o.now)
		res.addWarmup(w.recs.all)
	}
	<-readyStream // it ends with ctx at the latest
	side.Wait()
	if err := ctx.Err(); err != nil && len(warmup) > 0 {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	if o.window.Begin != nil {
		o.window.Begin(ctx, res.Warmup)
	}
	m := newPhase(phaseMeasured)
	m.maxDuration = time.Duration(cfg.Workload.MaxSeconds * float64(time.Second))
	params := metrics.Params{Goodput: cfg.Goodput, Percentiles: cfg.Percentiles}
	if o.records != nil {
		m.acc, m.sink = metrics.NewAccumulator(params, o.exact), o.records
	}
	started := time.Now()
	sched := metrics.SampleSched()
	mw, err := runWall(ctx, m, src, st, client, url, o.now)
	if err != nil {
		return nil, err
	}
	params.Duration = mw.since()
	params.SchedP99Ms = metrics.SampleSched().P99MsSince(sched)
	if o.window.End != nil {
		o.window.End(ctx)
	}
	res.Requests, res.Start = m.recs.all, mw.start
	var s metrics.Summary
	if m.acc != nil {
		m.acc.SetRun(params.Duration, params.SchedP99Ms)
		s = m.acc.Summary()
	} else {
		s = metrics.Summarize(m.recs.all, params)
	}
	cfg.describe(&s, st, src.Len(), started)
	if s.StreamHash, err = src.Hash(); err != nil {
		return nil, err
	}
	s.SentHash = m.sent.sum()
	res.Summary = s
	return res, ctx.Err()
}

// wallStream is Run's stream and its measured requests as a source. A run
// that streams its records (WithRecords) reads a lazy source, the virtual
// clock's (lazyStream), when the workload has one: requests are produced
// as they fall due and dropped when final, so memory does not grow with
// the stream. Otherwise the stream is planned whole, single requests'
// bodies dropped and rendered again when sent (plan): multi_turn with
// actual history (later turns carry the server's answers, so the stream
// is not the lazy source's), and a run that keeps its records
// (Result.Requests: a record per request from the start, made from the
// request's fields; `autoinfer bench`, sweeps, sim overhead's probe).
// release ends what the source holds besides memory (its arrival
// sequence); call it once the stream hash was taken.
func wallStream(cfg Config, streamed bool) (st *Stream, src reqSource, release func(), err error) {
	if streamed {
		st, l, ok, err := lazyStream(cfg, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		if ok {
			return st, l, l.stop, nil
		}
	}
	if st, err = plan(cfg, true); err != nil {
		return nil, nil, nil, err
	}
	return st, &sliceSource{reqs: st.Requests, hash: st.Hash()}, func() {}, nil
}

// addWarmup counts a warm-up phase's records into the warm-up's outcome.
func (res *Result) addWarmup(recs []RequestRecord) {
	for _, r := range recs {
		if r.Sent {
			res.Warmup.Sent++
		}
		if !r.Success {
			res.WarmupFailed++
			if res.Warmup.ErrorTypes == nil {
				res.Warmup.ErrorTypes = map[string]int{}
			}
			res.Warmup.ErrorTypes[r.ErrorType]++
		}
	}
	res.Warmup.Failed = res.WarmupFailed
}

// describe fills the summary's fields that say what ran (vllm bench
// serve's result keys), the same under either clock.
func (cfg Config) describe(s *metrics.Summary, st *Stream, prompts int, started time.Time) {
	s.Date = started.Format("20060102-150405")
	s.EndpointType, s.Backend, s.Label = cfg.Backend, cfg.Backend, cfg.Label
	s.ModelID, s.TokenizerID = cfg.Model, st.TokenizerID()
	s.NumPrompts = prompts
	s.RequestRate = metrics.Rate(cfg.Arrival.RequestRate)
	s.Burstiness = cfg.Arrival.Burstiness
	if c := cfg.Arrival.MaxConcurrency; c > 0 {
		s.MaxConcurrency = &c
	}
	s.TrialID, s.RunID, s.Seed = cfg.TrialID, cfg.RunID, cfg.Seed
	s.WarmupRequests = len(st.Warmup)
}

// sentDigest digests the session headers and bodies actually sent, in
// index order: two runs with equal sent hashes sent byte-identical
// requests, also where multi_turn history holds the server's answers. It
// takes each body's digest (bodySum) as it is sent; one sent ahead of an
// earlier index waits, as its digest, until the earlier ones were sent or
// the phase ended, so a phase that sends in index order keeps nothing.
type sentDigest struct {
	h    hash.Hash
	next int              // the lowest index not digested yet
	held map[int]sentBody // sent, waiting for an earlier index
}

type sentBody struct {
	session string
	sum     bodySum
}

// newSentDigest digests a phase's sent requests.
func newSentDigest() *sentDigest {
	return &sentDigest{h: sha256.New(), held: map[int]sentBody{}}
}

// sumOf is the digest of request r's body as sent: the one taken when r
// was produced (sealed), else that of body's bytes (a warm-up request, a
// later turn rendered with the server's answers).
func sumOf(r *Request, body []byte) bodySum {
	if r.sealed {
		return r.sum
	}
	return bytesSum(body)
}

// add takes request i's body digest as it is sent.
func (d *sentDigest) add(i int, session string, sum bodySum) {
	if i != d.next {
		d.held[i] = sentBody{session, sum}
		return
	}
	d.write(i, sentBody{session, sum})
	for d.next++; ; d.next++ {
		b, ok := d.held[d.next]
		if !ok {
			return
		}
		delete(d.held, d.next)
		d.write(d.next, b)
	}
}

func (d *sentDigest) write(i int, b sentBody) {
	writeInt(d.h, int64(i))
	writeField(d.h, b.session)
	d.h.Write(b.sum[:])
}

// sum digests what is still held, in index order (requests never sent are
// left out), and returns the digest.
func (d *sentDigest) sum() string {
	for _, i := range slices.Sorted(maps.Keys(d.held)) {
		d.write(i, d.held[i])
	}
	clear(d.held)
	return hex.EncodeToString(d.h.Sum(nil))
}
