package sim

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/autoinfer/autoinfer/target/mixhash"
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
	id        string
	prompt    []int
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

// tokenID is the id at absolute position p of the sequence.
func (s *seq) tokenID(p int) int {
	if p < s.promptLen {
		return s.prompt[p]
	}
	return s.samp.token(p - s.promptLen)
}

// ensureHashes extends the block hash chain to n full blocks: each
// block's hash chains its tokens onto the previous block's (the chain
// root for the first). The prompt's ids are read from the slice and only
// generated ones asked of the sampler: this runs over every computed
// token under the virtual clock.
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
		p, end := i*blockSize, (i+1)*blockSize
		for _, id := range s.prompt[min(p, s.promptLen):min(end, s.promptLen)] {
			h = chainToken(h, id)
		}
		for p = max(p, s.promptLen); p < end; p++ {
			h = chainToken(h, s.samp.token(p-s.promptLen))
		}
		s.hashes = append(s.hashes, h)
	}
}

// hashPrompt is the sampler's key of prompt, chained onto seed, and the
// block hash chain of prompt's full blocks of blockSize tokens (none when
// blockSize is 0: no prefix caching), in one pass over the prompt. The
// two chains are independent, so the CPU runs them side by side at about
// the cost of one: under the virtual clock they are a pass over every
// prompt token.
func hashPrompt(seed uint64, prompt []int, blockSize int) (uint64, []uint64) {
	key := seed
	var hashes []uint64
	done := 0
	if blockSize > 0 {
		hashes = make([]uint64, 0, len(prompt)/blockSize)
		h := uint64(chainRoot)
		for ; done+blockSize <= len(prompt); done += blockSize {
			for _, id := range prompt[done : done+blockSize] {
				key, h = chainToken(key, id), chainToken(h, id)
			}
			hashes = append(hashes, h)
		}
	}
	for _, id := range prompt[done:] {
		key = chainToken(key, id)
	}
	return key, hashes
}

// chainRoot is the hash the first block's chain starts from.
const chainRoot = 0x6a09e667f3bcc908

// chainToken chains token id onto hash h.
func chainToken(h uint64, id int) uint64 {
	return mixhash.Mix64(h ^ uint64(id)*0x9e3779b97f4a7c15)
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
