package workload

import "github.com/autoinfer/autoinfer/trials/field"

// LongestRequest returns the measured request of a trial's workload that
// asks the most of an engine's context: its prompt, the earlier turns of its
// conversation (prompts and answers of max_tokens each) and its own
// max_tokens. It builds the same seeded items the driver sends (workload,
// num_prompts, seed and trial id; no server, model or arrival needed), so a
// request it names is one the run will send, and it says which line of the
// workload's file the request came from. tok nil means the tokenizer the
// workload names. A limit below its Tokens() means that request can only
// fail. Its errors are *field.Errors with paths relative to the workload
// (num_prompts included, the spec's workload.num_prompts).
func LongestRequest(w Workload, numPrompts int, seed int64, trialID string, tok Tokenizer) (Longest, error) {
	if numPrompts < 0 {
		return Longest{}, field.Errorf("num_prompts", "must be >= 0, got %d", numPrompts)
	}
	w = w.WithDefaults()
	if tok == nil {
		t, err := LoadTokenizer(w.Tokenizer)
		if err != nil {
			return Longest{}, err
		}
		tok = t
	}
	lazy, err := BuildItems(w, numPrompts, PhaseSource(PhaseMeasured, seed, trialID), tok)
	if err != nil {
		return Longest{}, err
	}
	if s, ok := lazy.(sizer); ok {
		return longestBySize(lazy, s), nil
	}
	var file string
	if fs := w.Files(); len(fs) > 0 {
		file = fs[0]
	}
	var l Longest
	conv := make([]int, lazy.Len()) // tokens of each item's conversation once answered
	for i := range conv {
		it := lazy.At(i)
		in := it.InputTokens
		if it.Prev >= 0 {
			in += conv[it.Prev]
		}
		conv[i] = in + it.OutputTokens
		if conv[i] > l.Tokens() {
			l = Longest{InputTokens: in, OutputTokens: it.OutputTokens, Line: it.Line}
			if it.Line > 0 {
				l.File = file
			}
		}
	}
	return l, nil
}

// sizer gives an item's lengths without building it (random's items).
type sizer interface {
	Sizes(i int) (in, out int)
}

var _ sizer = randomItems{}

// longestBySize finds the longest of single-request items from their drawn
// lengths and builds only that one for its exact count, so a
// 10-million-request spec is checked without generating its prompts. (An
// item a token shorter by its lengths could count one more at the join of
// prefix and body; it is not looked for: the check refuses only what must
// fail, and the engine's own refusal is typed at run time.)
func longestBySize(items Items, s sizer) Longest {
	best, at := -1, 0
	for i := range items.Len() {
		if in, out := s.Sizes(i); in+out > best {
			best, at = in+out, i
		}
	}
	if best < 0 {
		return Longest{}
	}
	it := items.At(at)
	return Longest{InputTokens: it.InputTokens, OutputTokens: it.OutputTokens}
}
