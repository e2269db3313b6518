package driver

import (
	"fmt"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// Longest returns the measured request of cfg that asks the most of an
// engine's context: its prompt, the earlier turns of its conversation
// (prompts and answers of max_tokens each) and its own max_tokens. It
// builds the same seeded items Run sends (workload, num_prompts, seed and
// trial id; no server, model or arrival needed), so a request it names is
// one the run will send, and it says which line of the workload's file the
// request came from. A limit below Longest().Tokens() means that request
// can only fail.
func Longest(cfg Config) (workload.Longest, error) {
	if cfg.NumPrompts < 0 {
		return workload.Longest{}, fmt.Errorf("num_prompts: must be >= 0, got %d", cfg.NumPrompts)
	}
	cfg = cfg.withDefaults()
	tok, err := cfg.tokenizer()
	if err != nil {
		return workload.Longest{}, err
	}
	lazy, err := workload.BuildItems(cfg.Workload, cfg.NumPrompts, source(phaseMeasured, cfg.Seed, cfg.TrialID), tok)
	if err != nil {
		return workload.Longest{}, fmt.Errorf("workload.%w", err)
	}
	if s, ok := lazy.(sizer); ok {
		return longestBySize(lazy, s), nil
	}
	items := make([]workload.Item, lazy.Len())
	for i := range items {
		items[i] = lazy.At(i)
	}
	var file string
	if fs := cfg.Workload.Files(); len(fs) > 0 {
		file = fs[0]
	}
	var l workload.Longest
	conv := make([]int, len(items)) // tokens of each item's conversation once answered
	for i, it := range items {
		in := it.InputTokens
		if it.Prev >= 0 {
			in += conv[it.Prev]
		}
		conv[i] = in + it.OutputTokens
		if conv[i] > l.Tokens() {
			l = workload.Longest{InputTokens: in, OutputTokens: it.OutputTokens, Line: it.Line}
			if it.Line > 0 {
				l.File = file
			}
		}
	}
	return l, nil
}

// tokenizer is cfg's tokenizer: the one given, else the workload's.
func (cfg Config) tokenizer() (workload.Tokenizer, error) {
	if cfg.Tokenizer != nil {
		return cfg.Tokenizer, nil
	}
	tok, err := workload.LoadTokenizer(cfg.Workload.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("workload.%w", err)
	}
	return tok, nil
}

// sizer gives an item's lengths without building it (random's items).
type sizer interface {
	Sizes(i int) (in, out int)
}

// longestBySize finds the longest of single-request items from their drawn
// lengths and builds only that one for its exact count, so a
// 10-million-request spec is checked without generating its prompts. (An
// item a token shorter by its lengths could count one more at the join of
// prefix and body; it is not looked for: the check refuses only what must
// fail, and the engine's own refusal is typed at run time.)
func longestBySize(items workload.Items, s sizer) workload.Longest {
	best, at := -1, 0
	for i := range items.Len() {
		if in, out := s.Sizes(i); in+out > best {
			best, at = in+out, i
		}
	}
	if best < 0 {
		return workload.Longest{}
	}
	it := items.At(at)
	return workload.Longest{InputTokens: it.InputTokens, OutputTokens: it.OutputTokens}
}
