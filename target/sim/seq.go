package sim

import (
	"errors"
	"iter"
	"slices"
	"sync/atomic"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// errEngineStopped ends sequences still in the engine when it shuts down.
var errEngineStopped = errors.New("engine stopped")

// Abort reasons a handler can give the engine.
const (
	abortNone       int32 = iota
	abortClientGone       // the client went away: finish_reason "abort"
	abortStopString       // the handler matched a stop string: finish_reason "stop"
)

// seq is one request inside an engine. Fields above the loop-owned block are
// set before submission and read-only afterwards; loop-owned fields are
// touched only by the engine goroutine under engine.mu; the atomics and the
// notify channel are how the engine hands progress to the HTTP handler.
type seq struct {
	id string
	// prompt holds the prompt's ids flat (the HTTP and replay paths) or
	// spans does, as the workload shares them (a Fleet's token path):
	// never copied into one slice. ids reads either.
	prompt    []int
	spans     []tokenizer.Span
	promptLen int
	samp      sampling
	target    int    // tokens to generate before finishing
	reason    string // finish_reason when target is reached: "length" or "stop"
	// remoteKV is the number of prompt tokens whose KV was pulled from a
	// prefill engine: they are not recomputed on first admission.
	remoteKV int
	// holdKV keeps the blocks after finishing for a decode engine to pull.
	holdKV  bool
	arrival time.Time
	// fleet, when set, is told of every token and the finish (virtual
	// time, no handler goroutine); tag names the request to it.
	fleet *Fleet
	tag   int

	// loop-owned (hashes holds the prompt's full blocks before submission)
	hashes     []uint64 // chained hashes of the full blocks of known tokens
	computed   int      // tokens whose KV is in blocks
	blocks     []int32
	registered int // leading blocks registered in the prefix cache
	admitted   bool
	finished   bool
	scheduled  time.Time
	firstTok   time.Time
	lastTok    time.Time

	// engine → handler. progress holds the generated-token count and the
	// done flag in one word (count<<1 | done), so a handler never sees the
	// final count without the flag and streams the last token as if more
	// were coming.
	progress     atomic.Uint64
	cachedTokens atomic.Int32
	abort        atomic.Int32
	notify       chan struct{}
	// Written before done is set; read after done is observed.
	finishReason string
	err          error
	heldBlocks   []int
}

func newSeq(id string, prompt []int, samp sampling, target int, reason string, now time.Time) *seq {
	return &seq{
		id: id, prompt: prompt, promptLen: len(prompt), samp: samp, target: target, reason: reason,
		arrival: now, notify: make(chan struct{}, 1),
	}
}

// known is the number of tokens whose ids are decided: the prompt and every
// generated token.
func (s *seq) known() int { return s.promptLen + s.generated() }

// generated is the number of tokens generated so far.
func (s *seq) generated() int { n, _ := s.state(); return n }

// state reads the generated count and whether the sequence is done, as one
// consistent pair.
func (s *seq) state() (generated int, done bool) {
	p := s.progress.Load()
	return int(p >> 1), p&1 == 1
}

// publish hands progress to the handler.
func (s *seq) publish(generated int, done bool) {
	p := uint64(generated) << 1
	if done {
		p |= 1
	}
	s.progress.Store(p)
}

// ids yields the sequence's token ids at positions [from, to): the
// prompt's where they are kept, then the generated ones the sampler
// draws. Every reader of prompt ids after hashPrompt goes through it,
// and none runs on a blind span's (Fleet.Submit refuses blind spans
// where ids are read: KV events).
func (s *seq) ids(from, to int) iter.Seq[int] {
	return func(yield func(int) bool) {
		s.walk(from, to, yield, func(uint64, int, int) bool {
			panic("sim: token ids of a blind span read (Fleet.Submit admits blind spans only where no id is read)")
		})
	}
}

// walk hands the sequence's tokens at positions [from, to) to tok one by
// one (the prompt's ids, then the generated ones the sampler draws) and
// each piece of a blind span among them (the span's tokens inside
// [from, to), by blindKey of its Key and offsets in the span) to blind,
// in order, until either returns false; it reports whether it went to
// the end.
func (s *seq) walk(from, to int, tok func(int) bool, blind func(k uint64, a, b int) bool) bool {
	end := min(to, s.promptLen)
	if s.spans == nil && from < end && !yieldIDs(s.prompt[from:end], tok) {
		return false
	}
	base := 0
	for _, sp := range s.spans {
		if base >= end {
			break
		}
		n := sp.Len()
		if lo, hi := max(from, base), min(end, base+n); lo < hi {
			if sp.Blind > 0 && !blind(blindKey(sp.Key), lo-base, hi-base) ||
				sp.Blind == 0 && !yieldIDs(sp.IDs[lo-base:hi-base], tok) {
				return false
			}
		}
		base += n
	}
	for p := max(from, s.promptLen); p < to; p++ {
		if !tok(s.samp.token(p - s.promptLen)) {
			return false
		}
	}
	return true
}

// yieldIDs yields ids and reports whether the consumer took them all.
func yieldIDs[T int | uint16](ids []T, yield func(int) bool) bool {
	for _, id := range ids {
		if !yield(int(id)) {
			return false
		}
	}
	return true
}

// ensureHashes extends the block hash chain to n full blocks: each
// block's hash chains its tokens (a blind span's piece in it as one step,
// as feedBlind chains it) onto the previous block's (the chain root for
// the first). A served request's full prompt blocks come from hashPrompt
// or hashSpans, so this mostly reads the block straddling the prompt's
// end and generated ones.
func (s *seq) ensureHashes(n, blockSize int) {
	if len(s.hashes) >= n {
		return
	}
	s.hashes = slices.Grow(s.hashes, n-len(s.hashes))
	for i := len(s.hashes); i < n; i++ {
		h := uint64(chainRoot)
		if i > 0 {
			h = s.hashes[i-1]
		}
		s.walk(i*blockSize, (i+1)*blockSize,
			func(id int) bool { h = chainToken(h, id); return true },
			func(k uint64, a, b int) bool { h = chainBlind(h, k, a, b); return true })
		s.hashes = append(s.hashes, h)
	}
}

// signal wakes s's handler. A fleet's sequence has none (the fleet hears
// of its tokens directly), and a send attempt locks the channel: skipped,
// as it comes once per generated token.
func (s *seq) signal() {
	if s.fleet != nil {
		return
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}
