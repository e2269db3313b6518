package driver

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// reqSource is a measured stream as a phase reads it, on either clock:
// requests in index order, held only between their production and their drop.
type reqSource interface {
	Len() int
	// Lazy is true when requests are produced on demand: the driver pulls
	// up to the next session start ahead instead of all at once.
	Lazy() bool
	// Next produces the next request in index order; false once all are.
	Next() (int, bool, error)
	// At is request i, produced and not dropped.
	At(i int) *Request
	// Drop releases request i.
	Drop(i int)
	// Hash is the stream hash; it produces what is left to produce.
	Hash() (string, error)
	// Tokens is produced request i's prompt as spans of token ids
	// (tokenpath.go) and its text as parts (workload.Join); nil when the
	// source has none for it.
	Tokens(i int) ([]tokenizer.Span, []string)
}

// sliceSource is a stream built whole (Generate, a warm-up phase).
type sliceSource struct {
	reqs []Request
	hash string
	next int
	// tokens draws request i's spans and prompt (nil: none has them).
	tokens func(i int) ([]tokenizer.Span, []string)
}

func (s *sliceSource) Len() int   { return len(s.reqs) }
func (s *sliceSource) Lazy() bool { return false }
func (s *sliceSource) Next() (int, bool, error) {
	if s.next == len(s.reqs) {
		return 0, false, nil
	}
	s.next++
	return s.next - 1, true, nil
}
func (s *sliceSource) At(i int) *Request     { return &s.reqs[i] }
func (s *sliceSource) Drop(int)              {}
func (s *sliceSource) Hash() (string, error) { return s.hash, nil }

func (s *sliceSource) Tokens(i int) ([]tokenizer.Span, []string) {
	if s.tokens == nil || !s.reqs[i].own {
		return nil, nil
	}
	return s.tokens(i)
}

// lazySource renders a workload of single requests one request at a
// time, digesting each into the stream hash as it is produced: for items
// that depend on their index alone (workload.BuildItems of kind random, or
// trace: its lines) memory does not grow with the stream. Its requests,
// warm-up and hash are those Generate gives.
type lazySource struct {
	cfg     Config
	items   workload.Items
	r       renderer
	tok     workload.Tokenizer
	offsets func() (time.Duration, bool)
	stop    func()
	next    int
	live    map[int]*Request
	h       *streamHash // nil when known holds the hash
	sums    *bodySums   // seals each request as produced
	// known is the stream hash an earlier run of this stream recorded in
	// shared under key (what the run does not send is then not produced
	// to be digested); keyed:
	// the stream has a key (streamKey).
	known, key string
	keyed      bool
	shared     *Workloads
	// tokens draws each prompt's ids with its text (tokenpath.go); blind:
	// its shared parts are only named (workload.TokenItems.AtParts).
	tokens workload.TokenItems
	blind  bool
	// multi: multi_turn sessions (synthetic history), produced in index
	// order, so session by session; conv is the conversation of the session
	// in production so far, answers included, the only one held.
	multi bool
	conv  conversation
}

// lazyStream is Generate for a workload of single requests or of
// multi-turn sessions with synthetic history: the warm-up and ready
// requests, and the measured requests as a source rendered as they fall
// due. A random, trace or multi_turn workload's items are built on demand
// too; a dataset or shared_prefix workload's are built whole (its texts
// are held once, its bodies as they fall due). A session's turns are
// rendered when it starts, held until each is answered. ok is false for
// sessions of built workloads and for actual history, whose later turns
// carry the server's answers (Generate's stream).
func lazyStream(cfg Config, shared *Workloads) (st *Stream, src *lazySource, ok bool, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, false, err
	}
	cfg = cfg.withDefaults()
	multi := cfg.Workload.Kind == workload.MultiTurn
	if multi && cfg.Workload.History != workload.HistorySynthetic {
		return nil, nil, false, nil // later turns carry the server's answers
	}
	tok, err := cfg.tokenizer()
	if err != nil {
		return nil, nil, false, err
	}
	s := source(phaseMeasured, cfg.Seed, cfg.TrialID)
	items, err := shared.buildItems(cfg, s, tok)
	if err != nil {
		return nil, nil, false, fmt.Errorf("workload.%w", err)
	}
	if !multi && !singles(items) {
		return nil, nil, false, nil
	}
	r := newRenderer(cfg)
	st = &Stream{tok: tok, items: items, render: r}
	if st.Warmup, err = cfg.warmup(items, r, tok, cfg.WarmupRequests); err != nil {
		return nil, nil, false, err
	}
	ready, err := cfg.warmup(items, r, tok, 1)
	if err != nil || len(ready) == 0 {
		return nil, nil, false, fmt.Errorf("ready check request: %w", err)
	}
	st.Ready = ready[0]
	// One offset per session start, every item of a workload of singles
	// (a timed trace item's own offset wins).
	offs := cfg.Arrival.OffsetSeq(items.Starts(), func() *rand.Rand { return s("arrival", 0) })
	next, stop := iter.Pull(offs)
	l := &lazySource{cfg: cfg, items: items, r: r, tok: tok, offsets: next, stop: stop, live: map[int]*Request{},
		multi: multi, shared: shared}
	l.h, l.sums = newStreamHash(cfg), newBodySums(r.template)
	if shared != nil {
		l.key, l.keyed = streamKey(cfg, tok)
		if h, ok := shared.streamHash(l.key); l.keyed && ok {
			l.known, l.h = h, nil
		}
	}
	return st, l, true, nil
}

// singles reports whether every item is a request of its own (no session
// turns): a kind other than random and trace is built whole, and streams
// its bodies only then.
func singles(items workload.Items) bool {
	if _, drawn := items.(workload.TokenItems); drawn {
		return true // random and trace: single requests by construction
	}
	for i := range items.Len() {
		if it := items.At(i); it.Prev >= 0 || it.Turn > 0 {
			return false
		}
	}
	return true
}

func (l *lazySource) Len() int   { return l.items.Len() }
func (l *lazySource) Lazy() bool { return true }

func (l *lazySource) Next() (int, bool, error) {
	if l.next == l.items.Len() {
		return 0, false, nil
	}
	i := l.next
	req, err := l.request(i)
	if err != nil {
		return 0, false, err
	}
	if l.h != nil {
		l.h.add(&req)
	}
	l.live[i] = &req
	l.next++
	return i, true, nil
}

// request produces request i. On the token path it draws the prompt's
// spans (blind: its shared parts only named, l.blind), and keeps a
// generated prompt as its parts: no body is rendered but to be sent as
// one, and no joined prompt at all.
func (l *lazySource) request(i int) (Request, error) {
	if l.multi {
		return l.turn(i)
	}
	if l.tokens == nil {
		it, spans := drawItem(l.items, i)
		req, err := l.cfg.request(i, it, l.offset(it), conversation{system: it.System, turns: []string{it.Prompt}}, false, l.r, l.tok)
		l.sums.seal(&req, spans)
		return req, err
	}
	it, spans, parts := l.tokens.AtParts(i, l.blind)
	off := l.offset(it)
	if parts != nil && it.System == "" && l.r.template != nil {
		// The item's own prompt alone: what cfg.request renders and
		// counts (countsOwnPrompt) but for the body.
		req := l.cfg.head(i, it, off)
		req.own, req.spans, req.parts = true, spans, parts
		l.sums.seal(&req, spans)
		return req, nil
	}
	if parts != nil && l.blind {
		// tokenSource asks for blind prompts only when the run has a
		// template, and random and trace items have no system prompt.
		return Request{}, fmt.Errorf("request %d: a blind prompt needs the body template", i)
	}
	var generated []tokenizer.Span
	if parts != nil {
		it.Prompt, generated = workload.Join(parts), spans
	}
	req, err := l.cfg.request(i, it, off, conversation{system: it.System, turns: []string{it.Prompt}}, false, l.r, l.tok)
	l.sums.seal(&req, generated)
	if err == nil && req.own && spans != nil {
		req.spans, req.parts = spans, []string{it.Prompt}
	}
	return req, err
}

// turn produces turn i of the session in production (a first turn starts
// the next one), its body carrying the session's synthetic history as
// Generate renders it (Config.requests).
func (l *lazySource) turn(i int) (Request, error) {
	it := l.items.At(i)
	conv := conversation{system: it.System, turns: []string{it.Prompt}}
	if it.Turn > 0 {
		conv = conversation{system: l.conv.system, turns: append(slices.Clone(l.conv.turns), it.Prompt)}
	}
	req, err := l.cfg.request(i, it, l.offset(it), conv, false, l.r, l.tok)
	l.sums.seal(&req, nil)
	conv.turns = append(conv.turns, it.Answer)
	l.conv = conv
	return req, err
}

// offset is the arrival offset of item it when it starts a session (the
// next the arrival process gives), else 0.
func (l *lazySource) offset(it workload.Item) time.Duration {
	if it.Prev >= 0 {
		return 0
	}
	off, _ := l.offsets()
	return off
}

func (l *lazySource) At(i int) *Request { return l.live[i] }

func (l *lazySource) Tokens(i int) ([]tokenizer.Span, []string) {
	if r := l.live[i]; r != nil {
		return r.spans, r.parts
	}
	return nil, nil
}
func (l *lazySource) Drop(i int) { delete(l.live, i) }

// Hash is the stream hash: the one recorded for this stream, else the
// digest of the whole stream (what is left is produced), then recorded.
func (l *lazySource) Hash() (string, error) {
	if l.h == nil {
		l.stop()
		return l.known, nil
	}
	for l.next < l.items.Len() {
		i, _, err := l.Next()
		if err != nil {
			return "", err
		}
		l.Drop(i)
	}
	l.stop()
	sum := l.h.sum()
	if l.keyed {
		l.shared.recordStreamHash(l.key, sum)
	}
	return sum, nil
}
