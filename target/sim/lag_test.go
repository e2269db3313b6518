package sim_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// lateClock is the time package with every timer firing late by lag: a host
// too loaded to wake the engine on time.
type lateClock struct {
	sim.RealClock
	lag time.Duration
}

func (c lateClock) NewTimer(d time.Duration) sim.Timer {
	return lateTimer{c.RealClock.NewTimer(d + c.lag), c.lag}
}

type lateTimer struct {
	sim.Timer
	lag time.Duration
}

func (t lateTimer) Reset(d time.Duration) bool { return t.Timer.Reset(d + t.lag) }

// Each step that ends 1 ms after its modelled end adds 1 ms of lag; the
// worst step lags 1 ms; the modelled busy time is the sum of the modelled
// steps, so lag/busy is the fraction a load generator should discount.
func TestStepLagIsMeasuredAndExported(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lag, tokens, plen = time.Millisecond, 10, 64
		n := simtest.NewNetwork()
		c := n.Client()
		off := false
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing, Clock: lateClock{lag: lag},
			Engine: engine.Config{EnablePrefixCaching: &off}})
		code, raw := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model,
			"prompt": prompt(5, plen), "max_tokens": tokens, "ignore_eos": true, "temperature": 0})
		if code != 200 {
			t.Fatalf("completion: %d %s", code, raw)
		}
		synctest.Wait()
		busy := timing.StepTime(plen, 0, 0)
		for k := 1; k < tokens; k++ {
			busy += timing.StepTime(0, 1, plen+k-1)
		}
		m := metrics(t, c, w.URL)
		if got, want := m.Sum("autoinfer:sim_step_lag_seconds_total", nil), (tokens * lag).Seconds(); !near(got, want) {
			t.Errorf("lag total %v s, want %v s (%d steps × %v)", got, want, tokens, lag)
		}
		if got := m.Sum("autoinfer:sim_step_lag_max_seconds", nil); !near(got, lag.Seconds()) {
			t.Errorf("worst step lag %v s, want %v", got, lag.Seconds())
		}
		if got := m.Sum("autoinfer:sim_modelled_busy_seconds_total", map[string]string{"engine": "0"}); !near(got, busy.Seconds()) {
			t.Errorf("modelled busy %v s, want %v", got, busy.Seconds())
		}
	})
}

// ObserveSteps hears every step of the live loop with its planned end and
// its completion: with timers 1 ms late, each step completes 1 ms after its
// planned end, and the planned ends follow the modelled step times from
// the first step's start (the loop catches up instead of drifting).
func TestObserveStepsReportsEachLag(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lag, tokens, plen = time.Millisecond, 6, 64
		n := simtest.NewNetwork()
		c := n.Client()
		off := false
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing, Clock: lateClock{lag: lag},
			Engine: engine.Config{EnablePrefixCaching: &off}})
		var steps []sim.StepTiming
		var mu sync.Mutex
		w.Server().ObserveSteps(func(st sim.StepTiming) {
			mu.Lock()
			steps = append(steps, st)
			mu.Unlock()
		})
		start := time.Now()
		code, raw := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model,
			"prompt": prompt(5, plen), "max_tokens": tokens, "ignore_eos": true, "temperature": 0})
		if code != 200 {
			t.Fatalf("completion: %d %s", code, raw)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(steps) != tokens {
			t.Fatalf("%d steps observed, want %d", len(steps), tokens)
		}
		end := start.Add(timing.StepTime(plen, 0, 0))
		for k, st := range steps {
			if k > 0 {
				end = end.Add(timing.StepTime(0, 1, plen+k-1))
			}
			if !st.End.Equal(end) || st.Done.Sub(st.End) != lag {
				t.Errorf("step %d: planned end %v, done %v after it; want %v and %v",
					k, st.End.Sub(start), st.Done.Sub(st.End), end.Sub(start), lag)
			}
		}
	})
}

// An engine on time reports no lag.
func TestStepLagIsZeroOnTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		c := n.Client()
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing})
		postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model, "prompt": "hi", "max_tokens": 5, "ignore_eos": true})
		synctest.Wait()
		m := metrics(t, c, w.URL)
		if l := m.Sum("autoinfer:sim_step_lag_seconds_total", nil); l != 0 {
			t.Errorf("lag %v s on the bubble's exact clock, want 0", l)
		}
		if b := m.Sum("autoinfer:sim_modelled_busy_seconds_total", nil); b == 0 {
			t.Error("no modelled busy time after 5 steps")
		}
	})
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// ObserveSteps marks the step a sleeping loop planned when a request woke
// it with that request's submit time: the first step of each of two
// requests sent apart (the loop idles in between), and no other step — not
// the one that takes in a third request sent while the second's first step
// runs. On the bubble's clock a channel receive takes no time, so each is
// planned at its submit, and completes late by the timer's 1 ms: the
// woken step's lateness that engine_wake_ms models.
func TestObserveStepsMarksWakeUps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const tokens, plen, gap = 3, 32, 5 * time.Millisecond
		n := simtest.NewNetwork()
		c := n.Client()
		off := false
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing, Clock: lateClock{lag: time.Millisecond},
			Engine: engine.Config{EnablePrefixCaching: &off}})
		var steps []sim.StepTiming
		var mu sync.Mutex
		w.Server().ObserveSteps(func(st sim.StepTiming) {
			mu.Lock()
			steps = append(steps, st)
			mu.Unlock()
		})
		post := func() {
			code, raw := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model,
				"prompt": prompt(5, plen), "max_tokens": tokens, "ignore_eos": true, "temperature": 0})
			if code != 200 {
				t.Errorf("completion: %d %s", code, raw)
			}
		}
		var sent []time.Time
		for i := range 2 {
			sent = append(sent, time.Now())
			var wg sync.WaitGroup
			if i == 1 {
				wg.Go(func() {
					time.Sleep(500 * time.Microsecond) // inside the first step: every step is 1 ms late
					post()
				})
			}
			post()
			wg.Wait()
			synctest.Wait()
			time.Sleep(gap) // the loop idles
		}
		mu.Lock()
		defer mu.Unlock()
		var woken []time.Time
		for k, st := range steps {
			if plan, late, ok := st.Wake(); ok {
				woken = append(woken, st.Woken)
				if plan != 0 || late != time.Millisecond {
					t.Errorf("step %d: planned %v after the submit, completed %v late; want 0 and the timers' 1 ms", k, plan, late)
				}
			}
		}
		if len(woken) != 2 || !woken[0].Equal(sent[0]) || !woken[1].Equal(sent[1]) {
			t.Errorf("%d steps, wake-ups at %v; want two, at the sends %v", len(steps), woken, sent)
		}
	})
}
