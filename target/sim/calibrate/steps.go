package calibrate

import (
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
)

// Step is one engine step read back from a group's token arrivals: its
// duration and what it computed.
type Step struct {
	Group    int
	Duration time.Duration
	Batch    sim.Batch
}

// token is one streamed token: request i's m-th (from 1) at time at.
type token struct {
	at   time.Duration
	i, m int
}

// Steps reconstructs the steps of group o (index g). Tokens of different
// streams that arrive within a third of the median inter-token gap are
// one step's output; the gap between two consecutive step ends is one
// step's duration when some stream emitted a token at both (it decoded
// throughout, so the engine never idled), read from those streams' own
// gaps (gap). That step decoded every stream
// that emitted a later token at its end over their contexts, and prefilled
// every stream whose first token it emitted (its uncached prompt tokens).
// The probe keeps every prompt within one step's token budget, so no
// prefill is split into chunks that emit nothing.
func Steps(g int, o *Observed) []Step {
	var toks []token
	for i, r := range o.Requests {
		for m, at := range r.Tokens {
			toks = append(toks, token{at, i, m + 1})
		}
	}
	slices.SortFunc(toks, func(a, b token) int { return int(a.at - b.at) })
	tol := medianGap(o.Requests) / 3
	var ends [][]token
	for _, t := range toks {
		if n := len(ends); n > 0 && t.at-ends[n-1][0].at <= tol && !holds(ends[n-1], t.i) {
			ends[n-1] = append(ends[n-1], t)
			continue
		}
		ends = append(ends, []token{t})
	}
	var out []Step
	for s := 1; s < len(ends); s++ {
		prev, cur := ends[s-1], ends[s]
		if !continued(prev, cur) {
			continue
		}
		st := Step{Group: g, Duration: gap(prev, cur)}
		for _, t := range cur {
			r := &o.Requests[t.i]
			if t.m == 1 {
				st.Batch.Chunks = append(st.Batch.Chunks, sim.Chunk{Tokens: r.PromptTokens - r.CachedTokens, Prefix: r.CachedTokens})
				continue
			}
			st.Batch.DecodeSeqs++
			st.Batch.DecodeContext += r.PromptTokens + t.m - 2
		}
		out = append(out, st)
	}
	return out
}

// holds reports whether a step end already has a token of request i: a
// step emits one token per request, so two close tokens of one stream
// (a late step followed at once by the next) are two steps.
func holds(end []token, i int) bool {
	for _, t := range end {
		if t.i == i {
			return true
		}
	}
	return false
}

// gap is the time between two consecutive step ends, read from the
// streams that emitted a token at both: the mean of each one's own gap.
// Every stream's token leaves the server and reaches the client some
// time after its step ended, and that delay grows with how many streams
// the step answered (their chunks are written and read one after
// another); a stream's own gap cancels its delay, as far as it keeps its
// place in that order, where the mean arrival over all of a step's
// tokens would charge a burst of newcomers' delivery to their step and
// credit it back to the next (per-sequence CPU cost read too high,
// decode cost too low).
func gap(prev, cur []token) time.Duration {
	var sum time.Duration
	n := 0
	for _, c := range cur {
		for _, p := range prev {
			if p.i == c.i && p.m == c.m-1 {
				sum, n = sum+c.at-p.at, n+1
			}
		}
	}
	return sum / time.Duration(n)
}

// continued reports whether a stream emitted a token at both step ends,
// consecutively.
func continued(prev, cur []token) bool {
	for _, c := range cur {
		for _, p := range prev {
			if p.i == c.i && p.m == c.m-1 {
				return true
			}
		}
	}
	return false
}

// medianGap is the median gap between consecutive tokens of a stream,
// over every stream.
func medianGap(reqs []Request) time.Duration {
	var gaps []time.Duration
	for _, r := range reqs {
		for i := 1; i < len(r.Tokens); i++ {
			gaps = append(gaps, r.Tokens[i]-r.Tokens[i-1])
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}
