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
	"github.com/autoinfer/autoinfer/target/tokenizer"
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
	// lazy says Body was left out to save memory: Run renders it again
	// from the stream's items when the request is sent (see plan).
	lazy bool
	// own says the body's prompt is its item's own prompt, alone (no
	// system prompt, no history): the virtual clock's token path may hand
	// a system the item's ids instead (tokenpath.go). spans are those ids
	// when the stream drew them with the request (shared with the
	// workload: never written), text their prompt.
	own   bool
	spans []tokenizer.Span
	// parts are the prompt the spans are of (workload.Join). A request of a
	// lazy token-path source has parts and no Body: its body is never
	// rendered (its digest needs only the parts: bodySum).
	parts []string
	// sum is the body's digest, taken once when the request was produced
	// (sealed; bodySums.seal) for the stream hash and the sent hash both.
	sum    bodySum
	sealed bool
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
	// items and render rebuild the bodies of lazy requests.
	items  workload.Items
	render renderer
}

// TokenizerID names the tokenizer the prompts were generated with.
func (s *Stream) TokenizerID() string { return s.tok.ID() }

// Hash identifies the measured stream: SHA-256 over every request's index,
// session header, turn links, intended offset and body digest (bodySum;
// for a body rendered at run time, its fixed parts). Equal hashes mean
// byte-identical requests.
func (s *Stream) Hash() string { return s.hash }

// Generate builds the stream of cfg: a pure function of the workload, seed,
// trial id, endpoint, model, arrival and header settings (never of time or
// of the server).
func Generate(cfg Config) (*Stream, error) { return plan(cfg, false) }

// plan builds the stream of cfg. With lazy set, the bodies of requests
// whose items can be rebuilt one at a time (workload.BuildItems) are
// hashed and dropped rather than kept: Run renders each again when it is
// sent, so a long run's memory does not grow with its prompts. The bytes
// sent and the hash are the same either way.
func plan(cfg Config, lazy bool) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tok, err := cfg.tokenizer()
	if err != nil {
		return nil, err
	}
	src := source(phaseMeasured, cfg.Seed, cfg.TrialID)
	items, err := workload.BuildItems(cfg.Workload, cfg.NumPrompts, src, tok)
	if err != nil {
		return nil, fmt.Errorf("workload.%w", err)
	}
	r := newRenderer(cfg)
	st := &Stream{tok: tok, items: items, render: r}
	h := newStreamHash(cfg)
	if st.Requests, err = cfg.requests(items, r, src, tok, lazy, h, newBodySums(r.template)); err != nil {
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
	st.hash = h.sum()
	return st, nil
}

// body returns request i's body, rendering a lazy one again.
func (s *Stream) body(r *Request) ([]byte, error) {
	if !r.lazy {
		return r.Body, nil
	}
	it := s.items.At(r.Index)
	return s.render.body(conversation{system: it.System, turns: []string{it.Prompt}}, it.OutputTokens)
}

// requests renders items: offsets of session starts from the arrival
// process (or the trace), bodies with history for later turns. Every
// request is sealed by sums and goes into h as it is made; with lazy set,
// a single-turn request's body is dropped once hashed.
func (cfg Config) requests(items workload.Items, r renderer, src workload.Source, tok workload.Tokenizer,
	lazy bool, h *streamHash, sums *bodySums) ([]Request, error) {
	n := items.Len()
	offsets := cfg.Arrival.Offsets(items.Starts(), func() *rand.Rand { return src("arrival", 0) })
	synthetic := cfg.Workload.History == workload.HistorySynthetic
	actual := cfg.Workload.Kind == workload.MultiTurn && !synthetic
	convs := map[int]*conversation{}
	out := make([]Request, n)
	next := 0
	for i := range n {
		it, spans := drawItem(items, i)
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
		sums.seal(&req, spans)
		h.add(&req)
		if lazy && it.Turn == 0 && it.Prev < 0 && !actual && !synthetic && it.System == "" {
			req.Body, req.lazy = nil, true
		}
		out[i] = req
	}
	return out, nil
}

// request renders item i with its history conv; offset is its arrival
// offset when it starts a session (a trace's own offset wins).
func (cfg Config) request(i int, it workload.Item, offset time.Duration, conv conversation, actual bool, r renderer, tok workload.Tokenizer) (Request, error) {
	req := cfg.head(i, it, offset)
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
	if cfg.countsOwnPrompt(it, conv) {
		req.InputTokens, req.own = it.InputTokens, true
	} else {
		req.InputTokens = conv.tokens(tok)
	}
	if actual {
		req.conv = conv
	}
	return req, nil
}

// head is request i of item it but for its body and prompt count.
func (cfg Config) head(i int, it workload.Item, offset time.Duration) Request {
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
	return req
}

// countsOwnPrompt reports whether item it's InputTokens already is conv's
// count: conv is the item's own single prompt, without system prompt, of
// a kind whose items count their prompt with the run's tokenizer (random,
// trace). Counting a 12k-token trace prompt again cost a tenth of a
// virtual run.
func (cfg Config) countsOwnPrompt(it workload.Item, conv conversation) bool {
	k := cfg.Workload.Kind
	return (k == workload.Random || k == workload.Trace) && it.System == "" && conv.system == "" &&
		len(conv.turns) == 1 && conv.turns[0] == it.Prompt
}

// warmup builds n warm-up requests, each shaped like a request of the
// workload's own: request i takes the input and output lengths of a
// measured item drawn by the warm-up phase's seed, so warm-up traffic has
// the workload's length mix and is never longer than its longest request
// (a mean-length warm-up of a trace whose requests run from 100 to 100k
// tokens fits neither). The prompts come from the warm-up phase's own
// sources and start with "Warmup", a token no generated prompt contains,
// so no warm-up prompt shares even its first token (hence no prefix-cache
// block) with a measured one. The ready check uses the first (n = 1).
func (cfg Config) warmup(items workload.Items, r renderer, tok workload.Tokenizer, n int) ([]Request, error) {
	if n == 0 || items.Len() == 0 {
		return nil, nil
	}
	src := source(phaseWarmup, cfg.Seed, cfg.TrialID)
	pick := src("pick", 0)
	reqs := make([]Request, n)
	for i := range reqs {
		it := items.At(pick.IntN(items.Len()))
		in, out := max(2, it.InputTokens), max(1, it.OutputTokens)
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

// streamHash digests what identifies the measured stream on the wire,
// request by request: each body as its digest (bodySum).
type streamHash struct {
	h hash.Hash
}

// newStreamHash is the hash of cfg's stream.
func newStreamHash(cfg Config) *streamHash {
	h := sha256.New()
	writeField(h, cfg.Endpoint)
	writeField(h, cfg.SessionHeader)
	return &streamHash{h: h}
}

// add digests q, sealed if it has a body.
func (s *streamHash) add(q *Request) {
	for _, n := range []int64{int64(q.Index), int64(q.Turn), int64(q.Prev), int64(q.Think), int64(q.Offset), int64(q.MaxTokens)} {
		writeInt(s.h, n)
	}
	writeField(s.h, q.Session)
	if q.sealed {
		s.h.Write(q.sum[:])
	} else {
		writeField(s.h, "history+")
		writeField(s.h, q.conv.turns[0])
	}
}

func (s *streamHash) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

func writeInt(h hash.Hash, n int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

func writeField(h hash.Hash, s string) {
	writeInt(h, int64(len(s)))
	_, _ = io.WriteString(h, s)
}
