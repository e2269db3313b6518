package workload

import (
	"math/rand/v2"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// TokenItems are Items that also give a prompt as the sim tokenizer's ids,
// drawn with its text rather than tokenized from it: the virtual clock hands
// these to a simulated engine, which then parses and tokenizes no body.
// The ids come as spans (tokenizer.Span): a trace block or a random
// workload's shared prefix is one span every prompt that holds it shares,
// not a copy per prompt.
type TokenItems interface {
	Items
	// AtTokens is At(i) and its prompt's ids as spans, whose ids in order
	// are those tokenizer.Tokenize gives for At(i).Prompt; nil spans when
	// the workload's tokenizer is not the sim's (the engine's own
	// tokenizer then reads another text). The spans are shared: never
	// written.
	AtTokens(i int) (Item, []tokenizer.Span)
	// AtParts is AtTokens with a generated prompt left as the parts it
	// joins (Join): the item's Prompt is then "", and each part is text
	// of the sim tokenizer's words, which JSON writes as it is. A prompt
	// that was not generated (a trace line's own) comes whole in the
	// item, with nil parts.
	//
	// With blind, a part many prompts share (a trace's full hash_id
	// block, random's shared prefix) is not drawn: its span is
	// tokenizer.Span{Key, Blind} and its part "", so Join is no longer
	// the prompt. Its Key is the one the drawn span has (generator.shared),
	// so both ways name the same blocks. Only a caller that reads neither
	// the ids nor the text of a prompt asks for it (the virtual clock's
	// token path when nothing on the request's way reads a prompt).
	AtParts(i int, blind bool) (Item, []tokenizer.Span, []string)
}

// Join is the prompt of parts: the non-empty ones separated by one space.
func Join(parts []string) string { return join(parts...) }

var (
	_ TokenItems = randomItems{}
	_ TokenItems = (*traceItems)(nil)
)

// generator draws prompt text with tok, and with ids (the sim tokenizer
// only) the text's ids as well; with blind (and ids) a shared part is
// not drawn at all (TokenItems.AtParts).
type generator struct {
	tok   Tokenizer
	ids   bool
	blind bool
}

// generate draws n tokens of text with r and, with g.ids, their ids.
func (g generator) generate(r *rand.Rand, n int) (string, []uint16) {
	if g.ids {
		return tokenizer.GenerateIDs[uint16](r, n, nil)
	}
	return g.tok.Generate(r, n), nil
}

// shared draws n tokens with r as text that many prompts share and, with
// g.ids, as their span, keyed. The span's Key is r's first draw, made
// nonzero, and the tokens are drawn after it: a function of r's seed
// alone, so with g.blind the span is {Key, Blind: n} and nothing else is
// drawn, yet names the ids a drawn span of the same source has. Two spans
// drawn from equal seeds at equal lengths have equal ids and equal keys.
// This is the Key contract (tokenizer.Span) for every source of a run,
// warm-up and measured phases alike: their seeds differ, so do their
// keys, but for the 2^-64 chance that two first draws of distinct seeds
// collide — the odds the engine's 64-bit block hashes take already.
// Drawing the key first is part of how prompts are drawn (SimPrompts).
func (g generator) shared(r *rand.Rand, n int) (string, tokenizer.Span) {
	key := max(r.Uint64(), 1)
	if g.ids && g.blind {
		return "", tokenizer.Span{Key: key, Blind: n}
	}
	text, ids := g.generate(r, n)
	if !g.ids {
		return text, tokenizer.Span{}
	}
	return text, tokenizer.Span{IDs: ids, Key: key}
}

// appendSpan appends s to spans when g draws ids and s has tokens.
func (g generator) appendSpan(spans []tokenizer.Span, s tokenizer.Span) []tokenizer.Span {
	if !g.ids || s.Len() == 0 {
		return spans
	}
	return append(spans, s)
}
