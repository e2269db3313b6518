package driver

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// reqSource is a measured stream as the virtual driver reads it: requests in
// index order, held only between their production and their drop.
type reqSource interface {
	Len() int
	// Lazy is true when requests are produced on demand (no sessions):
	// the driver pulls one ahead instead of all at once.
	Lazy() bool
	// Next produces the next request in index order; false once all are.
	Next() (int, bool, error)
	// At is request i, produced and not dropped.
	At(i int) *Request
	// Drop releases request i.
	Drop(i int)
	// Hash is the stream hash; it produces what is left to produce.
	Hash() (string, error)
	// Tokens is produced request i's prompt as token ids (tokenpath.go)
	// and its text as parts (workload.Join); nil when the source has none
	// for it.
	Tokens(i int) ([]int, []string)
}

// sliceSource is a stream built whole (Generate, a warm-up phase).
type sliceSource struct {
	reqs []Request
	hash string
	next int
	// tokens draws request i's ids and prompt (nil: none has them).
	tokens func(i int) ([]int, []string)
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

func (s *sliceSource) Tokens(i int) ([]int, []string) {
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
	h       *streamHash
	// tokens draws each prompt's ids with its text (tokenpath.go).
	tokens workload.TokenItems
}

// lazyStream is Generate for a workload of single requests: the warm-up
// and ready requests, and the measured requests as a source rendered as
// they fall due. A random or trace workload's items are built on demand
// too; a dataset or shared_prefix workload's are built whole (its texts
// are held once, its bodies as they fall due). ok is false for multi-turn
// sessions, whose later turns wait on earlier ones (Generate's stream).
func lazyStream(cfg Config, shared *Workloads) (st *Stream, src *lazySource, ok bool, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, false, err
	}
	cfg = cfg.withDefaults()
	if cfg.Workload.Kind == workload.MultiTurn {
		return nil, nil, false, nil
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
	if !singles(items) {
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
	// Every random or trace item arrives on its own: one offset per item
	// (a timed trace item's own offset wins).
	offs := cfg.Arrival.OffsetSeq(items.Len(), func() *rand.Rand { return s("arrival", 0) })
	next, stop := iter.Pull(offs)
	return st, &lazySource{cfg: cfg, items: items, r: r, tok: tok, offsets: next, stop: stop, live: map[int]*Request{},
		h: newStreamHash(cfg, r.template)}, true, nil
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
	off, _ := l.offsets()
	req, err := l.request(i, off)
	if err != nil {
		return 0, false, err
	}
	l.h.add(&req)
	l.live[i] = &req
	l.next++
	return i, true, nil
}

// request produces request i, due at off. On the token path it draws the
// prompt's ids, and keeps a generated prompt as its parts: no body is
// rendered but to be hashed (wireBody), and no joined prompt at all.
func (l *lazySource) request(i int, off time.Duration) (Request, error) {
	if l.tokens == nil {
		it := l.items.At(i)
		return l.cfg.request(i, it, off, conversation{system: it.System, turns: []string{it.Prompt}}, false, l.r, l.tok)
	}
	it, ids, parts := l.tokens.AtParts(i)
	if parts != nil && it.System == "" && l.r.template != nil {
		// The item's own prompt alone: what cfg.request renders and
		// counts (countsOwnPrompt) but for the body.
		req := l.cfg.head(i, it, off)
		req.own, req.ids, req.parts = true, ids, parts
		return req, nil
	}
	if parts != nil {
		it.Prompt = workload.Join(parts)
	}
	req, err := l.cfg.request(i, it, off, conversation{system: it.System, turns: []string{it.Prompt}}, false, l.r, l.tok)
	if err == nil && req.own && ids != nil {
		req.ids, req.parts = ids, []string{it.Prompt}
	}
	return req, err
}

func (l *lazySource) At(i int) *Request { return l.live[i] }

func (l *lazySource) Tokens(i int) ([]int, []string) {
	if r := l.live[i]; r != nil {
		return r.ids, r.parts
	}
	return nil, nil
}
func (l *lazySource) Drop(i int) { delete(l.live, i) }

func (l *lazySource) Hash() (string, error) {
	for l.next < l.items.Len() {
		i, _, err := l.Next()
		if err != nil {
			return "", err
		}
		l.Drop(i)
	}
	l.stop()
	return l.h.sum(), nil
}
