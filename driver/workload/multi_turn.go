package workload

import (
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// buildMultiTurn builds sessions × turns items, session-major (item
// s·turns+t is turn t of session s), truncated to n when n > 0. sessions
// defaults to ⌈n/turns⌉. Each session has its own system prompt when
// system_prompt_len > 0; each turn a user message of input_len tokens and,
// for synthetic history, an answer of its output length.
func (b builder) multiTurn() ([]Item, error) {
	w, n, src := b.w, b.n, b.src
	sessions := w.Sessions
	if sessions == 0 {
		if n == 0 {
			return nil, field.Errorf("sessions", "kind multi_turn needs sessions or num_prompts")
		}
		sessions = (n + w.Turns - 1) / w.Turns
	}
	total := sessions * w.Turns
	if n == 0 || n > total {
		n = total
	}
	think := time.Duration(w.ThinkTimeMs * float64(time.Millisecond))
	items := make([]Item, n)
	system := ""
	for i := range items {
		s, t := i/w.Turns, i%w.Turns
		if t == 0 {
			system = b.tok.Generate(src("session", s), w.SystemPromptLen)
		}
		r := src("turn", i)
		in, out := length(r, w.InputLen, w.RangeRatio), length(r, w.OutputLen, w.RangeRatio)
		it := Item{Session: s * w.Turns, Turn: t, Prev: -1, OutputTokens: out}
		it.Prompt = b.tok.Generate(r, in)
		if t == 0 {
			it.System = system
		} else {
			it.Prev = i - 1
			it.Think = think
		}
		it.InputTokens = b.tok.Count(join(it.System, it.Prompt))
		if w.History == HistorySynthetic {
			it.Answer = b.tok.Generate(r, out)
		}
		items[i] = it
	}
	return items, nil
}
