package tokenizer

// Span is a run of a prompt's token ids, shared read-only by every prompt
// that holds it: a prompt on the virtual clock's token path is a list of
// spans rather than one flat slice, so a block of a trace that thousands
// of prompts repeat is one slice, not a copy per prompt.
type Span struct {
	// IDs are the span's token ids: the generator's vocabulary ids (all
	// below VocabSize, so two bytes each). Never written once shared.
	IDs []uint16
	// Key, when not 0, names IDs: every span of one run with this Key
	// holds the same ids, so work over them (the engine's block hashes)
	// may be kept by Key and reused. 0: the span is its prompt's own.
	Key uint64
	// Blind, when not 0, is the length of a span whose ids were never
	// drawn (IDs nil, Key not 0): Key alone says what they are. The
	// virtual clock sends such spans when nothing on the request's way
	// reads a prompt's ids or text (only the engines' prefix cache, which
	// needs the blocks' identities, not their tokens), so a trace block is
	// neither drawn nor hashed token by token. A consumer that needs ids
	// refuses a blind span.
	Blind int
}

// Len is the span's number of tokens: its ids, or Blind.
func (s Span) Len() int { return len(s.IDs) + s.Blind }

// SpansLen is the number of tokens in spans.
func SpansLen(spans []Span) int {
	n := 0
	for _, s := range spans {
		n += s.Len()
	}
	return n
}
