package sim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// POST /reset_prefix_cache behaves like vLLM's: 200 with an empty body;
// the cache is cleared only when no block is in use, unless
// reset_running_requests preempts the running sequences first.
func TestResetPrefixCache(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		c := n.Client()
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing})
		p := prompt(7, 64)
		cached := func() int {
			t.Helper()
			code, raw := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model, "prompt": p, "max_tokens": 1})
			if code != http.StatusOK {
				t.Fatalf("completion: %d %s", code, raw)
			}
			var out completion
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			return out.Usage.PromptTokensDetails.CachedTokens
		}
		reset := func(query string) {
			t.Helper()
			code, raw := postVia(t, c, w.URL+"/reset_prefix_cache"+query, "")
			if code != http.StatusOK || len(raw) != 0 {
				t.Fatalf("reset%s: %d %q, want 200 and an empty body", query, code, raw)
			}
		}

		cached()
		if got := cached(); got == 0 {
			t.Fatal("the repeated prompt hit no cached tokens; the test needs a warm cache")
		}
		reset("")
		if got := cached(); got != 0 {
			t.Errorf("after an idle reset the prompt hit %d cached tokens, want 0", got)
		}

		// A long request keeps blocks in use: a plain reset is refused.
		done := make(chan int, 1)
		go func() {
			code, _ := postVia(t, c, w.URL+"/v1/completions", map[string]any{"model": model, "prompt": prompt(8, 64),
				"max_tokens": 200, "ignore_eos": true})
			done <- code
		}()
		synctest.Wait()
		warm := cached()
		if warm == 0 {
			t.Fatal("the repeated prompt hit no cached tokens while another request ran")
		}
		reset("")
		if got := cached(); got != warm {
			t.Errorf("a reset while a request ran changed the hit from %d to %d cached tokens; vLLM refuses it", warm, got)
		}
		before := metrics(t, c, w.URL).Sum("vllm:num_preemptions_total", nil)
		reset("?reset_running_requests=true&reset_external=true")
		if got := cached(); got != 0 {
			t.Errorf("after reset_running_requests the prompt hit %d cached tokens, want 0", got)
		}
		if after := metrics(t, c, w.URL).Sum("vllm:num_preemptions_total", nil); after != before+1 {
			t.Errorf("preemptions %v → %v, want the running request preempted once", before, after)
		}
		if code := <-done; code != http.StatusOK {
			t.Errorf("the preempted request ended with %d, want 200 (it is recomputed)", code)
		}

		code, raw := postVia(t, c, w.URL+"/reset_prefix_cache?reset_external=maybe", "")
		if code != http.StatusBadRequest || !strings.Contains(string(raw), "reset_external") {
			t.Errorf("bad boolean: %d %s, want 400 naming reset_external", code, raw)
		}
	})
}
