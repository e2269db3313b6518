package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Group is one probe group: Concurrency streams of DecodePrompt prompt
// tokens and Output output tokens, and while they decode, the Newcomers
// slot by slot, slot i sent when the first stream receives its token
// number NewcomerEvery·(i+1). A newcomer's prefill shares a step with the
// decoders, so that step's extra time is its prefill cost plus one
// sequence's CPU cost.
type Group struct {
	Concurrency, DecodePrompt, Output int
	Newcomers                         []Newcomer
	NewcomerEvery                     int
}

// Newcomer is one slot of newcomers: Count requests of Prompt tokens and
// max_tokens 1 sent together (a burst joins one step: its CPU cost grows
// with Count while the decoders stay the same); Repeat reuses the previous
// slot's prompt (prefix reuse: only its uncached tokens are prefilled).
type Newcomer struct {
	Prompt, Count int
	Repeat        bool
}

// newcomers is every group's newcomer slots.
var newcomers = []Newcomer{{16, 1, false}, {16, 8, false}, {64, 1, false}, {128, 4, false}, {256, 1, false},
	{256, 1, true}, {384, 1, false}, {512, 2, false}, {16, 32, false}, {32, 16, false}}

// Plan is the probe's design: every concurrency level against a short and a
// long decode context (decode cost per sequence and per context token),
// each group with ten newcomer slots of 16 to 512 prompt tokens, bursts
// of 1 to 32 and one repeat (prefill cost per token; the bursts of short
// prompts isolate the per-sequence CPU cost, which otherwise moves with the
// decoding sequences; cached prefixes). Step time then varies
// independently in sequences, prefill tokens, decoding sequences and
// context, which is what makes each coefficient identifiable. The order is
// shuffled by seed so drift in the server does not line up with a factor.
func Plan(seed uint64, maxConcurrency int) []Group {
	var gs []Group
	for k := 1; k <= maxConcurrency; k *= 2 {
		for _, p := range []int{64, 768} {
			gs = append(gs, Group{Concurrency: k, DecodePrompt: p, Output: 2*k + len(newcomers)*4 + 12, NewcomerEvery: 4, Newcomers: newcomers})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
	rng.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
	return gs
}

// Observed is one run of a group: the decoders first, then the newcomers,
// and how late the host ran it.
type Observed struct {
	Group    Group
	Requests []Request
	Load     Load
}

// Probe runs plans against one server.
type Probe struct {
	HTTP  *http.Client
	URL   string
	Model string
	Seed  uint64
	// Budget bounds the probe in server time: no group starts once it is
	// spent, and a group still running when it ends is cancelled and
	// dropped.
	Budget time.Duration
	// Rounds caps the repetitions of the plan (0: as many as the budget
	// allows).
	Rounds int
	// MaxConcurrency is the largest concurrency level probed.
	MaxConcurrency int
	// Progress receives one line per group (nil: none).
	Progress io.Writer
}

// Run runs the plan round after round until the budget or the rounds are
// spent and returns every group that completed (none when the budget ends
// the first). It fails on the first request the server refused, and when
// ctx ends.
func (p *Probe) Run(ctx context.Context) ([]Observed, error) {
	ctx, cancel := context.WithTimeout(ctx, p.Budget)
	defer cancel()
	c := &client{http: p.HTTP, base: p.URL, model: p.Model, start: time.Now()}
	rng := rand.New(rand.NewPCG(p.Seed, 1))
	plan := Plan(p.Seed, max(1, p.MaxConcurrency))
	var out []Observed
	var longest time.Duration
	for round := 0; p.Rounds == 0 || round < p.Rounds; round++ {
		for i, g := range plan {
			left := p.Budget - time.Since(c.start)
			if left < longest {
				p.progress("probe: budget %v spent after %d groups", p.Budget, len(out))
				return out, nil
			}
			t0 := time.Now()
			before, lagged := readLag(ctx, p.HTTP, p.URL)
			tm := &timers{}
			o, err := runGroup(ctx, c, g, rng, tm)
			if err != nil {
				if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
					p.progress("probe: budget %v reached, group %d dropped", p.Budget, len(out)+1)
					return out, nil
				}
				return nil, fmt.Errorf("probe group %d (concurrency %d): %w", len(out)+1, g.Concurrency, err)
			}
			longest = max(longest, time.Since(t0))
			o.Load = groupLoad(ctx, p, tm, &o, before, lagged)
			out = append(out, o)
			p.progress("probe: round %d group %d/%d concurrency %d context %d: %d requests, %v of %v budget; %s",
				round+1, i+1, len(plan), g.Concurrency, g.DecodePrompt, len(o.Requests), time.Since(c.start).Round(time.Millisecond), p.Budget, o.Load)
		}
	}
	return out, nil
}

func (p *Probe) progress(format string, args ...any) {
	if p.Progress != nil {
		fmt.Fprintf(p.Progress, format+"\n", args...)
	}
}

// runGroup starts the group's decoders one after another, each a quarter
// of its predecessor's time to first token after that first token (so it
// arrives mid-step and joins the next step as a visible prefill), and
// once all decode, sends the newcomers as the first decoder's tokens
// arrive.
func runGroup(ctx context.Context, c *client, g Group, rng *rand.Rand, tm *timers) (Observed, error) {
	o := Observed{Group: g}
	for range g.Concurrency {
		o.Requests = append(o.Requests, Request{Prompt: tokenizer.Generate(rng, g.DecodePrompt), MaxTokens: g.Output})
	}
	var slots [][]Request
	for _, nc := range g.Newcomers {
		slot := make([]Request, nc.Count)
		for i := range slot {
			slot[i] = Request{Prompt: tokenizer.Generate(rng, nc.Prompt), MaxTokens: 1}
			if nc.Repeat && len(slots) > 0 {
				slot[i].Prompt = slots[len(slots)-1][0].Prompt
			}
		}
		slots = append(slots, slot)
	}
	eg, ctx := errgroup.WithContext(ctx)
	firsts := make([]chan time.Duration, g.Concurrency)
	for i := range firsts {
		firsts[i] = make(chan time.Duration, 1)
	}
	tick := make(chan time.Duration, g.Output) // the first decoder's tokens
	for i := range g.Concurrency {
		eg.Go(func() error {
			if i > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case at := <-firsts[i-1]:
					if err := tm.pause(ctx, (at-o.Requests[i-1].Sent)/4); err != nil {
						return err
					}
				}
			}
			r := &o.Requests[i]
			err := c.send(ctx, r, func(at time.Duration) {
				if len(r.Tokens) == 1 {
					firsts[i] <- at
				}
				if i == 0 {
					tick <- at
				}
			})
			if i == 0 {
				close(tick)
			}
			return err
		})
	}
	sent := 0
	eg.Go(func() (err error) {
		sent, err = sendNewcomers(ctx, c, g, slots, firsts[g.Concurrency-1], tick, tm)
		return err
	})
	err := eg.Wait()
	for _, slot := range slots[:sent] {
		o.Requests = append(o.Requests, slot...)
	}
	return o, err
}

// sendNewcomers sends one slot of newcomers every g.NewcomerEvery tokens
// of the first decoder once the last decoder has its first token, each
// half a step after a token: the engine is then mid-step whatever the network's
// delay, so the newcomer joins the next step, never the one being planned
// as it arrived. It returns how many slots it sent: none more once the
// first decoder has ended (a server slow to start the decoders leaves the
// group fewer newcomers, not an error).
func sendNewcomers(ctx context.Context, c *client, g Group, slots [][]Request, ready <-chan time.Duration, tick <-chan time.Duration, tm *timers) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-ready:
	}
	// Count from now: tokens the first decoder received while the others
	// started are stale, and a newcomer paced on one would not land
	// mid-step.
	n := 0
	var last time.Duration
drain:
	for {
		select {
		case at, ok := <-tick:
			if !ok {
				return 0, nil
			}
			last = at
		default:
			break drain
		}
	}
	for j := 0; j < len(slots); {
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case at, ok := <-tick:
			if !ok {
				return j, nil
			}
			gap := at - last
			last = at
			if n++; n < g.NewcomerEvery*(j+1) || gap <= 0 {
				continue
			}
			if err := tm.pause(ctx, gap/2); err != nil {
				return j, err
			}
			eg, ctx := errgroup.WithContext(ctx)
			for i := range slots[j] {
				eg.Go(func() error { return c.send(ctx, &slots[j][i], nil) })
			}
			if err := eg.Wait(); err != nil {
				return j, err
			}
			j++
		}
	}
	for range tick { // let the first stream finish without blocking
	}
	return len(slots), nil
}

// groupLoad is how late the host ran group o: the server's step lag
// since before (when it reports it) and the probe's timers' lateness
// against the group's median token gap.
func groupLoad(ctx context.Context, p *Probe, tm *timers, o *Observed, before lagCounters, lagged bool) Load {
	var l Load
	if lagged {
		if after, ok := readLag(ctx, p.HTTP, p.URL); ok {
			l.LagRatio, l.LagKnown = after.ratio(before), true
		}
	}
	if gap := medianGap(o.Requests); gap > 0 {
		l.TimerLate = float64(tm.mean()) / float64(gap)
	}
	return l
}

// String is the load as the progress line shows it.
func (l Load) String() string {
	s := fmt.Sprintf("probe timers %.0f %% of a token gap late", 100*l.TimerLate)
	if l.LagKnown {
		s = fmt.Sprintf("server steps %.1f %% late, ", 100*l.LagRatio) + s
	}
	return s
}
