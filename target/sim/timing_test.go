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

// TestObserveRequestsReportsEngineTimes: on the bubble's exact clock an
// observed request's first token is emitted one prefill step after it was
// queued and its last one the decode steps later; the id is the client's
// X-Request-Id; a refused request reports nothing, and nothing is reported
// once the observer is removed.
func TestObserveRequestsReportsEngineTimes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const tokens, plen = 4, 32
		n := simtest.NewNetwork()
		c := n.Client()
		off := false
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing, Engine: engine.Config{EnablePrefixCaching: &off}})
		var mu sync.Mutex
		var got []sim.RequestTiming
		w.Server().ObserveRequests(func(rt sim.RequestTiming) {
			mu.Lock()
			got = append(got, rt)
			mu.Unlock()
		})
		start := time.Now()
		for _, stream := range []bool{true, false} {
			code, raw := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model, "prompt": prompt(3, plen),
				"max_tokens": tokens, "ignore_eos": true, "stream": stream}, "X-Request-Id", "req-a")
			if code != 200 {
				t.Fatalf("completion: %d %s", code, raw)
			}
		}
		if code, _ := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": "nosuch", "prompt": "hi"}); code == 200 {
			t.Fatal("a request for an unknown model was answered")
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%d timings, want 2 (the refused request reports none): %+v", len(got), got)
		}
		prefill := timing.StepTime(plen, 0, 0)
		decode := time.Duration(0)
		for k := 1; k < tokens; k++ {
			decode += timing.StepTime(0, 1, plen+k-1)
		}
		for i, rt := range got {
			if rt.ID != "req-a" || rt.Role != sim.RoleCollocated || rt.Tokens != tokens {
				t.Errorf("timing %d: id %q role %q tokens %d, want req-a, collocated, %d", i, rt.ID, rt.Role, rt.Tokens, tokens)
			}
			if rt.Received.Before(start) || rt.Queued.Before(rt.Received) {
				t.Errorf("timing %d: received %v, queued %v: want start <= received <= queued", i, rt.Received.Sub(start), rt.Queued.Sub(start))
			}
			if d := rt.First.Sub(rt.Queued); d != prefill {
				t.Errorf("timing %d: first token %v after queueing, want the prefill step %v", i, d, prefill)
			}
			if d := rt.Last.Sub(rt.First); d != decode {
				t.Errorf("timing %d: last token %v after the first, want %v", i, d, decode)
			}
		}
		w.Server().ObserveRequests(nil)
		postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model, "prompt": "hi", "max_tokens": 1})
		synctest.Wait()
		if len(got) != 2 {
			t.Errorf("%d timings after removing the observer, want still 2", len(got))
		}
	})
}
