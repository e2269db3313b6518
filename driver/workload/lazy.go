package workload

import (
	"github.com/autoinfer/autoinfer/target/tokenizer"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Items are a workload's items, built on demand: At(i) always returns the
// same item. A kind whose items each depend only on their index (random,
// multi_turn), or on their trace line (trace), holds none of their texts,
// so a long run need not keep every prompt in memory; the others are built
// at once, as Build does.
type Items interface {
	Len() int
	At(i int) Item
	// Starts counts the items that start a session (Prev < 0).
	Starts() int
}

// BuildItems is Build for callers that take items one at a time; the items
// are Build's, byte for byte.
func BuildItems(w Workload, n int, src Source, tok Tokenizer) (Items, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if w.Kind != Random && w.Kind != Trace && w.Kind != MultiTurn {
		items, err := Build(w, n, src, tok)
		return built(items), err
	}
	if n < 0 {
		return nil, field.Errorf("num_prompts", "must be >= 0, got %d", n)
	}
	if tok == nil {
		tok = Sim{}
	}
	b := builder{w: w.WithDefaults(), n: n, src: src, tok: tok}
	switch w.Kind {
	case Trace:
		return b.traceItems()
	case MultiTurn:
		return b.multiTurnItems()
	}
	return b.randomItems()
}

// built are items already in memory.
type built []Item

func (b built) Len() int      { return len(b) }
func (b built) At(i int) Item { return b[i] }

func (b built) Starts() int {
	n := 0
	for _, it := range b {
		if it.Prev < 0 {
			n++
		}
	}
	return n
}

// randomItems are random's items: item i is drawn from its own source
// src("request", i) after the shared prefix, so it can be built alone.
type randomItems struct {
	b      builder
	prefix string
	// prefixSpan is prefix's ids with the sim tokenizer (AtTokens): the
	// span every prompt shares, keyed by its source (generator.shared).
	prefixSpan tokenizer.Span
}

func (b builder) randomItems() (randomItems, error) {
	if b.n == 0 {
		return randomItems{}, field.Errorf("num_prompts", "kind random needs the number of requests (> 0)")
	}
	g := generator{tok: b.tok}
	_, g.ids = b.tok.(Sim)
	r := randomItems{b: b}
	r.prefix, r.prefixSpan = g.shared(b.src("prefix", 0), b.w.PrefixLen)
	return r, nil
}

func (r randomItems) Len() int { return r.b.n }

// Starts is every item: random's prompts are single requests.
func (r randomItems) Starts() int { return r.b.n }

// At builds item i. With a real tokenizer the prefix and the body are
// generated apart and joined by a space, so the prompt's count (which
// InputTokens reports) can differ from prefix_len + input_len by a token
// at the join.
func (r randomItems) At(i int) Item {
	it, _, _ := r.render(i, generator{tok: r.b.tok})
	return it
}

// AtTokens is At with the prompt's ids (TokenItems).
func (r randomItems) AtTokens(i int) (Item, []tokenizer.Span) {
	it, spans, parts := r.AtParts(i, false)
	if parts != nil {
		it.Prompt = join(parts...)
	}
	return it, spans
}

// AtParts is AtTokens with the prompt as its parts, the prefix and the
// body (TokenItems). The shared prefix is drawn once whatever blind says;
// blind only hands it as its key.
func (r randomItems) AtParts(i int, blind bool) (Item, []tokenizer.Span, []string) {
	if _, sim := r.b.tok.(Sim); !sim {
		return r.At(i), nil, nil
	}
	return r.render(i, generator{tok: r.b.tok, ids: true, blind: blind})
}

// render builds item i; with g.ids it returns the prompt's ids as spans
// (the shared prefix's, then the item's own) and its parts (join) instead
// of the item's Prompt.
func (r randomItems) render(i int, g generator) (Item, []tokenizer.Span, []string) {
	w := r.b.w
	rnd := r.b.src("request", i)
	in, out := length(rnd, w.InputLen, w.RangeRatio), length(rnd, w.OutputLen, w.RangeRatio)
	prefix, pspan := r.prefix, r.prefixSpan
	if g.blind && pspan.Key != 0 {
		prefix, pspan = "", tokenizer.Span{Key: pspan.Key, Blind: pspan.Len()}
	}
	if w.UniquePrefixes {
		var pids []uint16
		prefix, pids = g.generate(r.b.src("unique-prefix", i), w.PrefixLen)
		pspan = tokenizer.Span{IDs: pids} // the item's own
	}
	body, bids := g.generate(rnd, in)
	it := single(i)
	parts := []string{prefix, body}
	it.OutputTokens = out
	if !g.ids {
		it.Prompt = join(parts...)
		it.InputTokens = r.b.tok.Count(it.Prompt)
		return it, nil, nil
	}
	spans := g.appendSpan(g.appendSpan(make([]tokenizer.Span, 0, 2), pspan), tokenizer.Span{IDs: bids})
	// The sim tokenizer's count of the joined prompt: a space joins words
	// without a token of its own.
	it.InputTokens = tokenizer.SpansLen(spans)
	return it, spans, parts
}

// Sizes returns item i's drawn input and output lengths without generating
// its prompt: the prompt's own count (At's InputTokens) is the prefix's plus
// the input length, give or take the token a real tokenizer may merge at
// their join.
//
// With range_ratio 0 every request has the spec's lengths and no draw is
// needed: a million-prompt spec is then sized at once instead of seeding a
// source per request (each request's source is its own, so not drawing
// from it changes no other request).
func (r randomItems) Sizes(i int) (in, out int) {
	w := r.b.w
	if w.RangeRatio == 0 {
		return w.PrefixLen + max(w.InputLen, 1), max(w.OutputLen, 1)
	}
	rnd := r.b.src("request", i)
	in, out = length(rnd, w.InputLen, w.RangeRatio), length(rnd, w.OutputLen, w.RangeRatio)
	return w.PrefixLen + in, out
}
