package sim_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

func TestStopStringsAndStopTokens(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	text := prompt(11, 20)
	base := complete(t, url, map[string]any{"model": model, "prompt": text, "max_tokens": 30, "ignore_eos": true, "temperature": 0})
	words := strings.Fields(base.Choices[0].Text)
	stop := " " + words[5] // the sixth word, with its leading space
	want := strings.Join(words[:5], " ")
	if i := strings.Index(base.Choices[0].Text, stop); i < len(want) {
		t.Skipf("word %q occurs earlier in %q", stop, base.Choices[0].Text)
	}
	c := complete(t, url, map[string]any{"model": model, "prompt": text, "max_tokens": 30, "ignore_eos": true, "temperature": 0, "stop": []string{"zzz", stop}})
	if c.Choices[0].Text != want || c.Choices[0].FinishReason != "stop" || c.Usage.CompletionTokens != 6 {
		t.Fatalf("stop %q: got %q finish %q after %d tokens; want %q, stop, 6", stop, c.Choices[0].Text, c.Choices[0].FinishReason, c.Usage.CompletionTokens, want)
	}
	var raw struct {
		Choices []struct {
			StopReason any `json:"stop_reason"`
		} `json:"choices"`
	}
	_, body := post(t, url+"/v1/completions", map[string]any{"model": model, "prompt": text, "max_tokens": 30, "temperature": 0, "stop": stop})
	if err := json.Unmarshal(body, &raw); err != nil || raw.Choices[0].StopReason != stop {
		t.Fatalf("stop_reason: %s", body)
	}
	stopID := tokenizer.Tokenize(words[3])[0]
	c = complete(t, url, map[string]any{"model": model, "prompt": text, "max_tokens": 30, "ignore_eos": true, "temperature": 0, "stop_token_ids": []int{stopID}})
	if c.Choices[0].FinishReason != "stop" || c.Usage.CompletionTokens > 4 {
		t.Fatalf("stop_token_ids [%d]: finish %q after %d tokens, want stop within 4", stopID, c.Choices[0].FinishReason, c.Usage.CompletionTokens)
	}
	_, ev := streamPost(t, url+"/v1/completions", map[string]any{"model": model, "prompt": text, "max_tokens": 30, "ignore_eos": true, "temperature": 0, "stop": stop, "stream": true})
	var streamed strings.Builder
	for _, e := range ev[:len(ev)-1] {
		var ch completion
		if err := json.Unmarshal([]byte(e.data), &ch); err != nil {
			t.Fatal(err)
		}
		streamed.WriteString(ch.Choices[0].Text)
	}
	if streamed.String() != want {
		t.Fatalf("streamed with stop: %q, want %q", streamed.String(), want)
	}
}

func TestDeterministicEOSAndMaxTokens(t *testing.T) {
	t.Parallel()
	a, b := simtest.Start(t, sim.Options{}), simtest.Start(t, sim.Options{})
	body := map[string]any{"model": model, "prompt": prompt(12, 30), "max_tokens": 2000, "temperature": 0}
	ra, rb := complete(t, a, body), complete(t, b, body)
	n := ra.Usage.CompletionTokens
	if ra.Choices[0].FinishReason != "stop" || n < 32 || n > 512 || n != rb.Usage.CompletionTokens {
		t.Fatalf("natural end: %q after %d tokens on one replica, %d on the other; want stop in [32, 512] on both", ra.Choices[0].FinishReason, n, rb.Usage.CompletionTokens)
	}
	body["ignore_eos"] = true
	body["max_tokens"] = n + 10
	if c := complete(t, a, body); c.Usage.CompletionTokens != n+10 || c.Choices[0].FinishReason != "length" {
		t.Fatalf("ignore_eos: %d tokens (%s), want exactly max_tokens %d", c.Usage.CompletionTokens, c.Choices[0].FinishReason, n+10)
	}
}

func TestSeedMakesSamplingReproducible(t *testing.T) {
	t.Parallel()
	a, b := simtest.Start(t, sim.Options{}), simtest.Start(t, sim.Options{})
	body := map[string]any{"model": model, "prompt": prompt(13, 20), "max_tokens": 40, "ignore_eos": true, "temperature": 1.0, "seed": 42}
	ra, rb := complete(t, a, body), complete(t, b, body)
	if ra.Choices[0].Text != rb.Choices[0].Text {
		t.Fatalf("same seed, different text:\n%q\n%q", ra.Choices[0].Text, rb.Choices[0].Text)
	}
	body["seed"] = 43
	if rc := complete(t, a, body); rc.Choices[0].Text == ra.Choices[0].Text {
		t.Fatal("a different seed gave the same 40 sampled tokens")
	}
	body["temperature"] = 0
	greedy := complete(t, a, body)
	if greedy.Choices[0].Text == ra.Choices[0].Text {
		t.Fatal("temperature 1 gave exactly the greedy answer over 40 tokens")
	}
}

func TestLogprobsShapes(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	c := complete(t, url, map[string]any{"model": model, "prompt": "the model", "max_tokens": 6, "ignore_eos": true, "temperature": 0, "logprobs": 3})
	lp := c.Choices[0].Logprobs
	if len(lp.Tokens) != 6 || len(lp.TokenLogprobs) != 6 || len(lp.TopLogprobs) != 6 {
		t.Fatalf("want 6 entries each: %+v", lp)
	}
	for i, top := range lp.TopLogprobs {
		if len(top) != 3 {
			t.Fatalf("position %d: %d alternatives, want 3", i, len(top))
		}
		best := slices.Max(valuesOf(top))
		if top[lp.Tokens[i]] != lp.TokenLogprobs[i] || best != lp.TokenLogprobs[i] || best >= 0 {
			t.Fatalf("position %d: greedy token %q (%v) must be the best negative alternative in %v", i, lp.Tokens[i], lp.TokenLogprobs[i], top)
		}
	}
	code, raw := post(t, url+"/v1/chat/completions", map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "hi"}},
		"max_tokens": 3, "ignore_eos": true, "temperature": 0, "logprobs": true, "top_logprobs": 2})
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Logprobs struct {
				Content []struct {
					Token       string  `json:"token"`
					Logprob     float64 `json:"logprob"`
					Bytes       []int   `json:"bytes"`
					TopLogprobs []struct {
						Token   string  `json:"token"`
						Logprob float64 `json:"logprob"`
					} `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &chat) != nil {
		t.Fatalf("chat logprobs: %d %s", code, raw)
	}
	var joined strings.Builder
	for _, e := range chat.Choices[0].Logprobs.Content {
		joined.WriteString(e.Token)
		if len(e.TopLogprobs) != 2 || e.TopLogprobs[0].Token != e.Token || len(e.Bytes) != len(e.Token) {
			t.Fatalf("chat logprob entry %+v", e)
		}
	}
	if joined.String() != chat.Choices[0].Message.Content {
		t.Fatalf("logprob tokens %q do not spell the content %q", joined.String(), chat.Choices[0].Message.Content)
	}
}

func valuesOf(m map[string]float64) []float64 {
	var v []float64
	for _, x := range m {
		v = append(v, x)
	}
	return v
}

func TestTokenizeAndDetokenize(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	text := "the cache, the model."
	code, raw := post(t, url+"/tokenize", map[string]any{"model": model, "prompt": text})
	var tok struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &tok) != nil {
		t.Fatalf("tokenize: %d %s", code, raw)
	}
	if !slices.Equal(tok.Tokens, tokenizer.Tokenize(text)) || tok.Count != len(tok.Tokens) || tok.MaxModelLen == 0 {
		t.Fatalf("tokenize answered %s", raw)
	}
	code, raw = post(t, url+"/detokenize", map[string]any{"model": model, "tokens": tok.Tokens})
	var detok struct {
		Prompt string `json:"prompt"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &detok) != nil || detok.Prompt != text {
		t.Fatalf("detokenize: %d %s, want %q", code, raw, text)
	}
	msgs := []map[string]any{{"role": "user", "content": "the cache"}}
	_, raw = post(t, url+"/tokenize", map[string]any{"model": model, "messages": msgs})
	if json.Unmarshal(raw, &tok) != nil || tok.Count != sim.ChatPromptTokens([]sim.ChatMessage{{Role: "user", Content: "the cache"}}) {
		t.Fatalf("chat tokenize: %s", raw)
	}
}
