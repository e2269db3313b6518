package workload

import (
	"math/rand/v2"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// TokenItems are Items that also give a prompt as the sim tokenizer's ids,
// drawn with its text rather than tokenized from it: the virtual clock hands
// these to a simulated engine, which then parses and tokenizes no body.
type TokenItems interface {
	Items
	// AtTokens is At(i) and its prompt's ids, those tokenizer.Tokenize
	// gives for At(i).Prompt; nil ids when the workload's tokenizer is not
	// the sim's (the engine's own tokenizer then reads another text).
	AtTokens(i int) (Item, []int)
	// AtParts is AtTokens with a generated prompt left as the parts it
	// joins (Join): the item's Prompt is then "", and each part is text
	// of the sim tokenizer's words, which JSON writes as it is. A prompt
	// that was not generated (a trace line's own) comes whole in the
	// item, with nil parts.
	AtParts(i int) (Item, []int, []string)
}

// Join is the prompt of parts: the non-empty ones separated by one space.
func Join(parts []string) string { return join(parts...) }

var (
	_ TokenItems = randomItems{}
	_ TokenItems = (*traceItems)(nil)
)

// generator draws prompt text with tok, and with ids (the sim tokenizer
// only) the text's ids as well.
type generator struct {
	tok Tokenizer
	ids bool
}

func (g generator) generate(r *rand.Rand, n int) (string, []int) {
	return g.appendGenerated(r, n, nil)
}

// appendGenerated is generate with the ids (with ids only) appended to ids.
func (g generator) appendGenerated(r *rand.Rand, n int, ids []int) (string, []int) {
	if g.ids {
		return tokenizer.GenerateIDs(r, n, ids)
	}
	return g.tok.Generate(r, n), ids
}
