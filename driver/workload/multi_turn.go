package workload

import (
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// multiTurnItems are multi_turn's items, sessions × turns of them,
// session-major (item s·turns+t is turn t of session s), truncated to n
// when n > 0; sessions defaults to ⌈n/turns⌉. Each session has its own
// system prompt when system_prompt_len > 0; each turn a user message of
// input_len tokens and, for synthetic history, an answer of its output
// length. Item i is drawn from its own sources (its session's for the
// system prompt, src("turn", i) for the rest), so it is built alone, when
// asked for: a long run of sessions is never in memory at once.
type multiTurnItems struct {
	b     builder
	n     int
	think time.Duration
}

func (b builder) multiTurnItems() (multiTurnItems, error) {
	w, n := b.w, b.n
	sessions := w.Sessions
	if sessions == 0 {
		if n == 0 {
			return multiTurnItems{}, field.Errorf("sessions", "kind multi_turn needs sessions or num_prompts")
		}
		sessions = (n + w.Turns - 1) / w.Turns
	}
	total := sessions * w.Turns
	if n == 0 || n > total {
		n = total
	}
	return multiTurnItems{b: b, n: n, think: time.Duration(w.ThinkTimeMs * float64(time.Millisecond))}, nil
}

func (m multiTurnItems) Len() int { return m.n }

// Starts is the sessions with at least one turn among the items.
func (m multiTurnItems) Starts() int { return (m.n + m.b.w.Turns - 1) / m.b.w.Turns }

// At builds item i.
func (m multiTurnItems) At(i int) Item {
	w, src := m.b.w, m.b.src
	s, t := i/w.Turns, i%w.Turns
	r := src("turn", i)
	in, out := length(r, w.InputLen, w.RangeRatio), length(r, w.OutputLen, w.RangeRatio)
	it := Item{Session: s * w.Turns, Turn: t, Prev: -1, OutputTokens: out}
	it.Prompt = m.b.tok.Generate(r, in)
	if t == 0 {
		it.System = m.b.tok.Generate(src("session", s), w.SystemPromptLen)
	} else {
		it.Prev = i - 1
		it.Think = m.think
	}
	it.InputTokens = m.b.tok.Count(join(it.System, it.Prompt))
	if w.History == HistorySynthetic {
		it.Answer = m.b.tok.Generate(r, out)
	}
	return it
}

// multiTurn is every item of multiTurnItems, built whole.
func (b builder) multiTurn() ([]Item, error) {
	m, err := b.multiTurnItems()
	if err != nil {
		return nil, err
	}
	items := make([]Item, m.n)
	for i := range items {
		items[i] = m.At(i)
	}
	return items, nil
}
