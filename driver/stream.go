package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// Request is one request of a stream.
type Request struct {
	Index int
	// Session is the session header's value ("" when the header is off).
	Session string
	Turn    int
	// Prev is the index of the turn this one follows (-1: none); it is due
	// Think after Prev has finished. Otherwise it is due at Offset from the
	// start of the run.
	Prev   int
	Think  time.Duration
	Offset time.Duration
	// Body is the JSON body. It is nil for a later multi_turn turn with
	// actual history: Run renders it when the previous answer is known.
	Body []byte
	// InputTokens is the client-side prompt length (0 until rendered for a
	// nil Body); MaxTokens is the output length asked for.
	InputTokens int
	MaxTokens   int
	// conv is this request's conversation when Body is nil: the system
	// prompt (first turn) and this turn's user message.
	conv conversation
}

// Stream is the full request stream of a run: the measured requests and
// the warm-up requests sent before them.
type Stream struct {
	Requests []Request
	Warmup   []Request
	// Ready is the ready check's request: a warm-up style prompt of one
	// output token, sharing no prefix with the measured stream.
	Ready Request
	hash  string
	tok   workload.Tokenizer
}

// TokenizerID names the tokenizer the prompts were generated with.
func (s *Stream) TokenizerID() string { return s.tok.ID() }

// Hash identifies the measured stream: SHA-256 over every request's index,
// session header, turn links, intended offset and body (for a body rendered
// at run time, its fixed parts). Equal hashes mean byte-identical requests.
func (s *Stream) Hash() string { return s.hash }

// Generate builds the stream of cfg: a pure function of the workload, seed,
// trial id, endpoint, model, arrival and header settings (never of time or
// of the server).
func Generate(cfg Config) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tok := cfg.Tokenizer
	if tok == nil {
		var err error
		if tok, err = workload.LoadTokenizer(cfg.Workload.Tokenizer); err != nil {
			return nil, fmt.Errorf("workload.%w", err)
		}
	}
	src := source(phaseMeasured, cfg.Seed, cfg.TrialID)
	items, err := workload.Build(cfg.Workload, cfg.NumPrompts, src, tok)
	if err != nil {
		return nil, fmt.Errorf("workload.%w", err)
	}
	r := newRenderer(cfg)
	st := &Stream{tok: tok}
	if st.Requests, err = cfg.requests(items, r, src, tok); err != nil {
		return nil, err
	}
	if st.Warmup, err = cfg.warmup(items, r, tok, cfg.WarmupRequests); err != nil {
		return nil, err
	}
	ready, err := cfg.warmup(items, r, tok, 1)
	if err != nil || len(ready) == 0 {
		return nil, fmt.Errorf("ready check request: %w", err)
	}
	st.Ready = ready[0]
	st.hash = cfg.hashRequests(st.Requests)
	return st, nil
}

// requests renders items: offsets of session starts from the arrival
// process (or the trace), bodies with history for later turns.
func (cfg Config) requests(items []workload.Item, r renderer, src workload.Source, tok workload.Tokenizer) ([]Request, error) {
	starts := 0
	for _, it := range items {
		if it.Prev < 0 {
			starts++
		}
	}
	offsets := cfg.Arrival.Offsets(starts, func() *rand.Rand { return src("arrival", 0) })
	synthetic := cfg.Workload.History == workload.HistorySynthetic
	actual := cfg.Workload.Kind == workload.MultiTurn && !synthetic
	convs := map[int]*conversation{}
	out := make([]Request, len(items))
	next := 0
	for i, it := range items {
		var offset time.Duration
		if it.Prev < 0 {
			offset = offsets[next]
			next++
		}
		conv := conversation{system: it.System, turns: []string{it.Prompt}}
		if c, ok := convs[it.Session]; ok && it.Turn > 0 {
			conv = conversation{system: c.system, turns: append(append([]string{}, c.turns...), it.Prompt)}
		}
		req, err := cfg.request(i, it, offset, conv, actual, r, tok)
		if err != nil {
			return nil, err
		}
		if synthetic {
			conv.turns = append(conv.turns, it.Answer)
			convs[it.Session] = &conv
		}
		out[i] = req
	}
	return out, nil
}

// request renders item i with its history conv; offset is its arrival
// offset when it starts a session (a trace's own offset wins).
func (cfg Config) request(i int, it workload.Item, offset time.Duration, conv conversation, actual bool, r renderer, tok workload.Tokenizer) (Request, error) {
	req := Request{Index: i, Turn: it.Turn, Prev: it.Prev, Think: it.Think, MaxTokens: it.OutputTokens, InputTokens: it.InputTokens}
	if cfg.SessionHeader != NoHeader {
		req.Session = cfg.sessionValue(strconv.Itoa(it.Session), i, it.Turn)
	}
	if it.Prev < 0 {
		req.Offset = offset
		if it.Timed {
			req.Offset = it.Offset
		}
	}
	if it.Turn > 0 && actual {
		req.conv = conversation{turns: []string{it.Prompt}}
		req.InputTokens = 0
		return req, nil
	}
	b, err := r.body(conv, it.OutputTokens)
	if err != nil {
		return Request{}, err
	}
	req.Body = b
	req.InputTokens = conv.tokens(tok)
	if actual {
		req.conv = conv
	}
	return req, nil
}

// meanLengths are the mean input and output lengths of n items (at least
// 2 and 1), what warm-up prompts are sized by.
func meanLengths(n int, at func(int) workload.Item) (in, out int) {
	for i := range n {
		it := at(i)
		in += it.InputTokens
		out += it.OutputTokens
	}
	return max(2, in/n), max(1, out/n)
}

// warmup builds n warm-up requests: single-turn prompts of the measured
// stream's mean input and output lengths, drawn from the warm-up phase's own
// sources. Each prompt starts with "Warmup", a token no generated prompt
// contains, so no warm-up prompt shares even its first token (hence no
// prefix-cache block) with a measured one. The ready check uses the first
// (n = 1).
func (cfg Config) warmup(items []workload.Item, r renderer, tok workload.Tokenizer, n int) ([]Request, error) {
	if n == 0 || len(items) == 0 {
		return nil, nil
	}
	in, out := meanLengths(len(items), func(i int) workload.Item { return items[i] })
	return cfg.warmupOf(in, out, r, tok, n)
}

// warmupOf builds n warm-up requests of in input and out output tokens.
func (cfg Config) warmupOf(in, out int, r renderer, tok workload.Tokenizer, n int) ([]Request, error) {
	src := source(phaseWarmup, cfg.Seed, cfg.TrialID)
	reqs := make([]Request, n)
	for i := range reqs {
		conv := conversation{turns: []string{"Warmup " + tok.Generate(src("request", i), in-1)}}
		b, err := r.body(conv, out)
		if err != nil {
			return nil, err
		}
		reqs[i] = Request{Index: i, Prev: -1, Body: b, InputTokens: conv.tokens(tok), MaxTokens: out}
		if cfg.SessionHeader != NoHeader {
			reqs[i].Session = cfg.sessionValue("warmup-"+strconv.Itoa(i), i, 0)
		}
	}
	return reqs, nil
}

// hashRequests digests what identifies the measured stream on the wire.
func (cfg Config) hashRequests(reqs []Request) string {
	h := cfg.newStreamHasher()
	for i := range reqs {
		h.add(&reqs[i])
	}
	return h.sum()
}

// streamHasher digests a measured stream request by request, in index
// order.
type streamHasher struct{ h hash.Hash }

func (cfg Config) newStreamHasher() streamHasher {
	h := sha256.New()
	writeField(h, cfg.Endpoint)
	writeField(h, cfg.SessionHeader)
	return streamHasher{h}
}

func (s streamHasher) add(q *Request) {
	for _, n := range []int64{int64(q.Index), int64(q.Turn), int64(q.Prev), int64(q.Think), int64(q.Offset), int64(q.MaxTokens)} {
		writeInt(s.h, n)
	}
	writeField(s.h, q.Session)
	if q.Body != nil {
		writeBytes(s.h, q.Body)
	} else {
		writeField(s.h, "history+")
		writeField(s.h, q.conv.turns[0])
	}
}

func (s streamHasher) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

func writeInt(h hash.Hash, n int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

func writeField(h hash.Hash, s string) {
	writeInt(h, int64(len(s)))
	_, _ = io.WriteString(h, s)
}

// writeBytes is writeField of string(b), without copying b.
func writeBytes(h hash.Hash, b []byte) {
	writeInt(h, int64(len(b)))
	h.Write(b)
}
