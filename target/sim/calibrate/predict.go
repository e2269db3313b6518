package calibrate

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Metric names, as in a profile file's held-out error and in reports.
const (
	MetricStep       = "step"
	MetricThroughput = "throughput"
	MetricTTFTP50    = "ttft_p50"
	MetricTTFTP99    = "ttft_p99"
	MetricTPOTP50    = "tpot_p50"
	MetricTPOTP99    = "tpot_p99"
	MetricE2EP50     = "e2e_p50"
)

// Figures are one workload's summary figures: output tokens per second
// and per-request latency percentiles, in ms.
type Figures map[string]float64

// Measure summarises observed groups.
func Measure(groups []Observed) Figures {
	var ttft, tpot, e2e []float64
	tokens, busy := 0, time.Duration(0)
	for _, o := range groups {
		first, last := time.Duration(math.MaxInt64), time.Duration(0)
		for i := range o.Requests {
			r := &o.Requests[i]
			ttft, e2e = append(ttft, ms(r.TTFT())), append(e2e, ms(r.E2E()))
			if len(r.Tokens) > 1 {
				tpot = append(tpot, ms(r.TPOT()))
			}
			tokens += len(r.Tokens)
			first, last = min(first, r.Sent), max(last, r.Tokens[len(r.Tokens)-1])
		}
		busy += last - first
	}
	return summary(tokens, busy, ttft, tpot, e2e)
}

// Predict replays each group's requests (their send times and prompts) on
// the virtual clock with the engine opts describes, each group on an idle
// engine as the probe ran them, and summarises what the model predicts.
func Predict(opts sim.Options, groups []Observed) (Figures, error) {
	pred, err := Replayed(opts, groups)
	if err != nil {
		return nil, err
	}
	return Measure(pred), nil
}

// Replayed is each group as the model predicts it: the same requests,
// sent at the same times, with the token times the virtual clock's replay
// gives them.
func Replayed(opts sim.Options, groups []Observed) ([]Observed, error) {
	if opts.Engine.Model == "" {
		opts.Engine.Model = "calibrate" // the replay needs a name, not this one
	}
	out := make([]Observed, len(groups))
	for g, o := range groups {
		t0 := o.Requests[0].Sent
		for _, r := range o.Requests {
			t0 = min(t0, r.Sent)
		}
		trace := make([]sim.TraceRequest, len(o.Requests))
		for i, r := range o.Requests {
			trace[i] = sim.TraceRequest{At: r.Sent - t0, Prompt: promptIDs(r.Prompt, r.PromptTokens), MaxTokens: r.MaxTokens, IgnoreEOS: true}
		}
		rep, err := sim.Replay(opts, trace)
		if err != nil {
			return nil, fmt.Errorf("replaying group %d: %w", g+1, err)
		}
		out[g] = Observed{Group: o.Group, Requests: make([]Request, len(o.Requests))}
		for i, r := range rep.Requests {
			q := o.Requests[i]
			q.Tokens = make([]time.Duration, len(r.TokenTimes))
			for k, at := range r.TokenTimes {
				q.Tokens[k] = t0 + at
			}
			out[g].Requests[i] = q
		}
	}
	return out, nil
}

// Delayed is the groups with every token delay later: what a path of that
// overhead between the engine and the client makes of them.
func Delayed(groups []Observed, delay time.Duration) []Observed {
	if delay == 0 {
		return groups
	}
	out := make([]Observed, len(groups))
	for g, o := range groups {
		out[g] = Observed{Group: o.Group, Load: o.Load, Requests: make([]Request, len(o.Requests))}
		for i, r := range o.Requests {
			r.Tokens = slices.Clone(r.Tokens)
			for k := range r.Tokens {
				r.Tokens[k] += delay
			}
			out[g].Requests[i] = r
		}
	}
	return out
}

// PathOverhead is how much later than the model the groups' first
// requests got their first token, the median over groups (0 when they
// were early): each first request arrives at an idle engine, so what the
// model does not account for is the way to the engine and back.
func PathOverhead(opts sim.Options, groups []Observed) (time.Duration, error) {
	if len(groups) == 0 {
		return 0, nil
	}
	pred, err := Replayed(opts, groups)
	if err != nil {
		return 0, err
	}
	diffs := make([]float64, len(groups))
	for g := range groups {
		diffs[g] = float64(groups[g].Requests[0].TTFT() - pred[g].Requests[0].TTFT())
	}
	return time.Duration(max(0, quantile(diffs, 0.5))), nil
}

// promptIDs are token ids of text's prompt with the server's count n: the
// simulator's tokenisation, cut or extended deterministically, so prompts
// the probe repeated are equal (and share a cached prefix) in the replay.
func promptIDs(text string, n int) []int {
	ids := tokenizer.Tokenize(text)
	if len(ids) >= n {
		return ids[:n]
	}
	h := fnv.New64a()
	h.Write([]byte(text))
	seed := h.Sum64()
	for len(ids) < n {
		seed = seed*6364136223846793005 + 1442695040888963407
		ids = append(ids, int(seed>>40)%30000+1000)
	}
	return ids
}

func summary(tokens int, busy time.Duration, ttft, tpot, e2e []float64) Figures {
	f := Figures{MetricTTFTP50: quantile(ttft, 0.5), MetricTTFTP99: quantile(ttft, 0.99),
		MetricTPOTP50: quantile(tpot, 0.5), MetricTPOTP99: quantile(tpot, 0.99), MetricE2EP50: quantile(e2e, 0.5)}
	if busy > 0 {
		f[MetricThroughput] = float64(tokens) / busy.Seconds()
	}
	return f
}

// Errors is each metric's relative error of predicted against measured.
func Errors(predicted, measured Figures) Figures {
	out := Figures{}
	for k, m := range measured {
		if p, ok := predicted[k]; ok && m > 0 {
			out[k] = math.Abs(p-m) / m
		}
	}
	return out
}

// StepError is the median relative error of the fitted profile's step
// times on steps.
func StepError(p sim.Profile, steps []Step) float64 {
	errs := make([]float64, 0, len(steps))
	for i := range steps {
		m := float64(steps[i].Duration)
		if m > 0 {
			errs = append(errs, math.Abs(float64(p.BatchTime(&steps[i].Batch))-m)/m)
		}
	}
	return quantile(errs, 0.5)
}

// quantile is the nearest-rank q-quantile of xs (0 when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
