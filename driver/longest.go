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
	items, err := workload.Build(cfg.Workload, cfg.NumPrompts, source(phaseMeasured, cfg.Seed, cfg.TrialID), tok)
	if err != nil {
		return workload.Longest{}, fmt.Errorf("workload.%w", err)
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
