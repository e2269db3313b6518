package sim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

const model = simtest.DefaultModel

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []float64            `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func complete(t testing.TB, url string, body map[string]any) completion {
	t.Helper()
	code, raw := post(t, url+"/v1/completions", body)
	if code != http.StatusOK {
		t.Fatalf("completions: status %d: %s", code, raw)
	}
	var c completion
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return c
}

func TestHealthModelsLoad(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	if code, body := get(t, url+"/health"); code != http.StatusOK || len(body) != 0 {
		t.Fatalf("GET /health = %d %q, want 200 and an empty body", code, body)
	}
	code, body := get(t, url+"/v1/models")
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/models = %d %s (%v)", code, body, err)
	}
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != model || models.Data[0].OwnedBy != "vllm" || models.Data[0].MaxModelLen <= 0 {
		t.Fatalf("unexpected models list: %+v", models)
	}
	code, body = get(t, url+"/load")
	if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"server_load":0}` {
		t.Fatalf("GET /load on an idle server = %d %s, want {\"server_load\":0}", code, body)
	}
}

func TestCompletionNonStreaming(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	prompt := "the model serves the cache"
	c := complete(t, url, map[string]any{"model": model, "prompt": prompt, "max_tokens": 7, "temperature": 0, "ignore_eos": true})
	if c.Object != "text_completion" || !strings.HasPrefix(c.ID, "cmpl-") || c.Model != model {
		t.Fatalf("bad envelope: %+v", c)
	}
	ch := c.Choices[0]
	if ch.FinishReason != "length" || tokenizer.Count(ch.Text) != 7 {
		t.Fatalf("want 7 tokens and finish length, got %q (%d tokens) finish %q", ch.Text, tokenizer.Count(ch.Text), ch.FinishReason)
	}
	u := c.Usage
	if u.PromptTokens != tokenizer.Count(prompt) || u.CompletionTokens != 7 || u.TotalTokens != u.PromptTokens+7 {
		t.Fatalf("bad usage %+v", u)
	}
	for _, id := range tokenizer.Tokenize(ch.Text) {
		if id < tokenizer.FirstWord || id >= tokenizer.Words() {
			t.Fatalf("output token %d is not a vocabulary word", id)
		}
	}
}

func TestChatNonStreaming(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	msgs := []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": "what is the cache?"}}
	code, raw := post(t, url+"/v1/chat/completions", map[string]any{"model": model, "messages": msgs, "max_completion_tokens": 4, "temperature": 0})
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, raw)
	}
	var c completion
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Object != "chat.completion" || c.Choices[0].Message.Role != "assistant" || tokenizer.Count(c.Choices[0].Message.Content) != 4 {
		t.Fatalf("unexpected chat answer %s", raw)
	}
	// Template: one marker per message, the content, one generation marker.
	want := sim.ChatPromptTokens([]sim.ChatMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "what is the cache?"}})
	if want != 1+2+1+5+1 || c.Usage.PromptTokens != want {
		t.Fatalf("prompt_tokens = %d, template says %d (want 10)", c.Usage.PromptTokens, want)
	}
}

func TestConcurrentStreamsAllComplete(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			_, ev := streamPost(t, url+"/v1/completions", map[string]any{"model": model, "prompt": strings.Repeat("the ", 10+i), "max_tokens": 20, "ignore_eos": true, "stream": true})
			if n := len(ev); n != 21 { // 20 tokens + [DONE]
				t.Errorf("stream %d: %d frames, want 21", i, n)
			}
		})
	}
	wg.Wait()
	_, m := get(t, url+"/metrics")
	if !strings.Contains(string(m), `vllm:generation_tokens_total{engine="0",model_name="sim-llama-3-8b"} 320`) {
		t.Fatalf("generation_tokens_total should be 320 after 16×20 tokens:\n%s", grepLines(string(m), "generation_tokens_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A connection that never sent a request (a client pool dialling one more
// than it used) does not hold a graceful shutdown: net/http would wait 5 s.
func TestShutdownDoesNotWaitForUnusedConnections(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{})
		c, err := n.DialContext(t.Context(), "tcp", strings.TrimPrefix(w.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		synctest.Wait() // the server has the connection, in state new
		start := time.Now()
		w.Shutdown()
		if d := time.Since(start); d >= time.Second {
			t.Fatalf("graceful shutdown took %v with one unused connection open", d)
		}
	})
}
