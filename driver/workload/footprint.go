package workload

import "math"

// Footprint is how much a workload sends: the number of requests, the
// tokens of all their prompts (a multi_turn turn's history included, as its
// body carries it) and the output tokens asked for. A run's memory grows
// with it; trial run checks the estimate before anything starts.
type Footprint struct {
	Requests     int
	InputTokens  int64
	OutputTokens int64
}

// MeanInput is the mean prompt length in tokens (0 without requests).
func (f Footprint) MeanInput() float64 { return mean(f.InputTokens, f.Requests) }

// MeanOutput is the mean output length asked for (0 without requests).
func (f Footprint) MeanOutput() float64 { return mean(f.OutputTokens, f.Requests) }

func mean(total int64, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(total) / float64(n)
}

// Footprint returns w's footprint for n requests (0: the workload's natural
// count). Generated kinds are sized from their knobs, at the top of their
// length ranges; trace and dataset kinds read their file as Check does (an
// error names the file). w must be valid.
func (w Workload) Footprint(n int) (Footprint, error) {
	w = w.WithDefaults()
	upper := func(l int) int64 { return int64(math.Floor(float64(l) * (1 + w.RangeRatio))) }
	per := func(count int, in, out int64) Footprint {
		return Footprint{Requests: count, InputTokens: int64(count) * in, OutputTokens: int64(count) * out}
	}
	switch w.Kind {
	case Random:
		return per(n, upper(w.InputLen)+int64(w.PrefixLen), upper(w.OutputLen)), nil
	case Sonnet:
		return per(n, int64(w.InputLen), int64(w.OutputLen)), nil
	case SharedPrefix:
		if n == 0 {
			n = w.NumGroups * w.PromptsPerGroup
		}
		return per(n, int64(w.SystemPromptLen+w.QuestionLen), int64(w.OutputLen)), nil
	case MultiTurn:
		return w.multiTurnFootprint(n, upper), nil
	}
	rep, err := Check(w, nil)
	if err != nil {
		return Footprint{}, err
	}
	f := Footprint{Requests: rep.Requests, InputTokens: rep.InputTokens, OutputTokens: rep.OutputTokens}
	if n > 0 && rep.Requests > 0 && n != rep.Requests {
		// Fewer requests are a prefix of the file's; more are drawn again
		// from it (sharegpt's oversampling): the mean stays.
		scale := float64(n) / float64(rep.Requests)
		f = Footprint{Requests: n, InputTokens: int64(float64(f.InputTokens) * scale), OutputTokens: int64(float64(f.OutputTokens) * scale)}
	}
	return f, nil
}

// multiTurnFootprint sizes sessions × turns requests (truncated to n), turn
// t's body carrying the system prompt, t earlier user messages and answers,
// and its own message.
func (w Workload) multiTurnFootprint(n int, upper func(int) int64) Footprint {
	sessions := w.Sessions
	if sessions == 0 {
		sessions = (n + w.Turns - 1) / w.Turns
	}
	total := sessions * w.Turns
	if n == 0 || n > total {
		n = total
	}
	in, out := upper(w.InputLen), upper(w.OutputLen)
	f := Footprint{Requests: n}
	for i := range n {
		t := int64(i % w.Turns)
		f.InputTokens += int64(w.SystemPromptLen) + (t+1)*in + t*out
		f.OutputTokens += out
	}
	return f
}
