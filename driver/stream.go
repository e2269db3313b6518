package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
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
	tok, err := cfg.tokenizer()
	if err != nil {
		return nil, err
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
	offsets := cfg.Arrival.Offsets(starts, src("arrival", 0))
	synthetic := cfg.Workload.History == workload.HistorySynthetic
	actual := cfg.Workload.Kind == workload.MultiTurn && !synthetic
	convs := map[int]*conversation{}
	out := make([]Request, len(items))
	next := 0
	for i, it := range items {
		req := Request{Index: i, Turn: it.Turn, Prev: it.Prev, Think: it.Think, MaxTokens: it.OutputTokens, InputTokens: it.InputTokens}
		if cfg.SessionHeader != NoHeader {
			req.Session = cfg.sessionValue(strconv.Itoa(it.Session), i, it.Turn)
		}
		if it.Prev < 0 {
			req.Offset = offsets[next]
			if it.Timed {
				req.Offset = it.Offset
			}
			next++
		}
		conv := conversation{system: it.System, turns: []string{it.Prompt}}
		if c, ok := convs[it.Session]; ok && it.Turn > 0 {
			conv = conversation{system: c.system, turns: append(append([]string{}, c.turns...), it.Prompt)}
		}
		if it.Turn > 0 && actual {
			req.conv = conversation{turns: []string{it.Prompt}}
			req.InputTokens = 0
		} else {
			b, err := r.body(conv, it.OutputTokens)
			if err != nil {
				return nil, err
			}
			req.Body = b
			req.InputTokens = conv.tokens(tok)
			if actual {
				req.conv = conv
			}
		}
		if synthetic {
			conv.turns = append(conv.turns, it.Answer)
			convs[it.Session] = &conv
		}
		out[i] = req
	}
	return out, nil
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
func (cfg Config) warmup(items []workload.Item, r renderer, tok workload.Tokenizer, n int) ([]Request, error) {
	if n == 0 || len(items) == 0 {
		return nil, nil
	}
	src := source(phaseWarmup, cfg.Seed, cfg.TrialID)
	pick := src("pick", 0)
	reqs := make([]Request, n)
	for i := range reqs {
		it := items[pick.IntN(len(items))]
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

// hashRequests digests what identifies the measured stream on the wire.
func (cfg Config) hashRequests(reqs []Request) string {
	h := sha256.New()
	writeField(h, cfg.Endpoint)
	writeField(h, cfg.SessionHeader)
	for _, q := range reqs {
		for _, n := range []int64{int64(q.Index), int64(q.Turn), int64(q.Prev), int64(q.Think), int64(q.Offset), int64(q.MaxTokens)} {
			writeInt(h, n)
		}
		writeField(h, q.Session)
		if q.Body != nil {
			writeField(h, string(q.Body))
		} else {
			writeField(h, "history+")
			writeField(h, q.conv.turns[0])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeInt(h hash.Hash, n int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

func writeField(h hash.Hash, s string) {
	writeInt(h, int64(len(s)))
	h.Write([]byte(s))
}
