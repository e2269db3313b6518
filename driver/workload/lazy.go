package workload

import "github.com/autoinfer/autoinfer/trials/field"

// Items are a workload's items, built on demand: At(i) always returns the
// same item. A kind whose items each depend only on their index (random),
// or on their trace line (trace), holds none of their texts, so a long run
// need not keep every prompt in memory; the others are built at once, as
// Build does.
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
	if w.Kind != Random && w.Kind != Trace {
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
	if w.Kind == Trace {
		return b.traceItems()
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
}

func (b builder) randomItems() (randomItems, error) {
	if b.n == 0 {
		return randomItems{}, field.Errorf("num_prompts", "kind random needs the number of requests (> 0)")
	}
	return randomItems{b: b, prefix: b.tok.Generate(b.src("prefix", 0), b.w.PrefixLen)}, nil
}

func (r randomItems) Len() int { return r.b.n }

// Starts is every item: random's prompts are single requests.
func (r randomItems) Starts() int { return r.b.n }

// At builds item i. With a real tokenizer the prefix and the body are
// generated apart and joined by a space, so the prompt's count (which
// InputTokens reports) can differ from prefix_len + input_len by a token
// at the join.
func (r randomItems) At(i int) Item {
	w := r.b.w
	rnd := r.b.src("request", i)
	in, out := length(rnd, w.InputLen, w.RangeRatio), length(rnd, w.OutputLen, w.RangeRatio)
	prefix := r.prefix
	if w.UniquePrefixes {
		prefix = r.b.tok.Generate(r.b.src("unique-prefix", i), w.PrefixLen)
	}
	it := single(i)
	it.Prompt = join(prefix, r.b.tok.Generate(rnd, in))
	it.InputTokens = r.b.tok.Count(it.Prompt)
	it.OutputTokens = out
	return it
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
