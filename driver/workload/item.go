package workload

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Source returns the random source for one purpose and index. The same
// arguments must always give the same sequence, and different arguments
// independent ones: item i of a workload then never depends on how many
// items follow it.
type Source func(purpose string, index int) *rand.Rand

// Item is one abstract request: texts and lengths, before it is rendered
// for an endpoint.
type Item struct {
	// Session is the index of the first item of this item's session, or the
	// item's own index when it shares no session.
	Session int
	// Turn counts from 0 within a multi_turn session; Prev is the index of
	// the turn before it (-1 for none). A turn is due Think after its
	// previous turn has finished.
	Turn  int
	Prev  int
	Think time.Duration
	// System is sent as a system message to chat endpoints and prepended
	// (space separated) to the prompt on completions.
	System string
	// Prompt is the user text (multi_turn: this turn's message only).
	Prompt string
	// Answer is the assistant text later turns carry in their history when
	// History is synthetic.
	Answer string
	// InputTokens counts System and Prompt (joined by a space) with the
	// workload's tokenizer.
	InputTokens  int
	OutputTokens int
	// Offset is the intended send offset from a trace's timestamps; Timed
	// says whether it is set (otherwise the arrival process decides).
	Offset time.Duration
	Timed  bool
	// Line is the line of the workload's file the item was read from
	// (1-based; 0 when the kind generates it or its file has no lines that
	// map to requests, as sharegpt's JSON array).
	Line int
}

// Build returns the items of w. n is the number of requests asked for; 0
// means the workload's natural count (groups × prompts per group, sessions
// × turns, the trace's lines). random needs n > 0. tok generates and
// counts the prompts; nil means the sim tokenizer.
func Build(w Workload, n int, src Source, tok Tokenizer) ([]Item, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, field.Errorf("num_prompts", "must be >= 0, got %d", n)
	}
	w = w.WithDefaults()
	if tok == nil {
		tok = Sim{}
	}
	b := builder{w: w, n: n, src: src, tok: tok}
	switch w.Kind {
	case Random:
		return b.random()
	case SharedPrefix:
		return b.sharedPrefix()
	case MultiTurn:
		return b.multiTurn()
	case Trace:
		return b.trace()
	case ShareGPT:
		return b.shareGPT()
	case Sonnet:
		return b.sonnet()
	case BurstGPT:
		return b.burstGPT()
	default:
		return b.custom()
	}
}

// builder holds what every kind's builder needs.
type builder struct {
	w   Workload
	n   int
	src Source
	tok Tokenizer
}

// length draws a length uniform in [⌊L(1−r)⌋, ⌊L(1+r)⌋] as vllm's random
// dataset does, never below 1.
func length(r *rand.Rand, l int, ratio float64) int {
	lo, hi := int(float64(l)*(1-ratio)), int(float64(l)*(1+ratio))
	lo = max(lo, 1)
	hi = max(hi, lo)
	return lo + r.IntN(hi-lo+1)
}

// join concatenates texts with a space, skipping empty ones. Because white
// space only separates tokens, the token count of the result is the sum of
// the parts'.
func join(parts ...string) string {
	n, one := 0, ""
	for _, p := range parts {
		if p != "" {
			n, one = n+len(p)+1, p
		}
	}
	if n == len(one)+1 {
		return one // a single part is its own string, not a copy
	}
	// One allocation: a trace prompt joins dozens of blocks, and adding
	// them one at a time copied the prompt once per block.
	var b strings.Builder
	b.Grow(n)
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

func single(i int) Item { return Item{Session: i, Prev: -1} }

// random builds n prompts of a shared prefix and a random body (see
// randomItems).
func (b builder) random() ([]Item, error) {
	ri, err := b.randomItems()
	if err != nil {
		return nil, err
	}
	items := make([]Item, ri.Len())
	for i := range items {
		items[i] = ri.At(i)
	}
	return items, nil
}
