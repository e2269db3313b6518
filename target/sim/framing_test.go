package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// rawStream posts body with X-Request-Id and returns the response bytes.
func rawStream(t *testing.T, url string, body map[string]any, reqID string) (string, http.Header) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", reqID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	return string(b), resp.Header
}

var createdRE = regexp.MustCompile(`"created":(\d+)`)

// expectedPieces gets the token texts of the same request without
// streaming, so the stream can be checked byte for byte against them.
func expectedPieces(t *testing.T, url, text string, n int) []string {
	t.Helper()
	c := complete(t, url, map[string]any{"model": model, "prompt": text, "max_tokens": n, "ignore_eos": true, "temperature": 0, "logprobs": 0})
	if strings.Join(c.Choices[0].Logprobs.Tokens, "") != c.Choices[0].Text {
		t.Fatalf("logprob tokens %q do not concatenate to the text %q", c.Choices[0].Logprobs.Tokens, c.Choices[0].Text)
	}
	return c.Choices[0].Logprobs.Tokens
}

func TestCompletionSSEFramingByteForByte(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	text := "the cache serves"
	pieces := expectedPieces(t, url, text, 3)
	got, hdr := rawStream(t, url+"/v1/completions", map[string]any{"model": model, "prompt": text, "max_tokens": 3,
		"ignore_eos": true, "temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}}, "req-1")
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	m := createdRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no created field in %q", got)
	}
	head := `data: {"id":"cmpl-req-1","object":"text_completion","created":` + m[1] + `,"model":"sim-llama-3-8b",`
	var want strings.Builder
	for i, p := range pieces {
		finish := "null"
		if i == len(pieces)-1 {
			finish = `"length"`
		}
		fmt.Fprintf(&want, `%s"choices":[{"index":0,"text":%q,"logprobs":null,"finish_reason":%s,"stop_reason":null}],"usage":null}`+"\n\n", head, p, finish)
	}
	fmt.Fprintf(&want, `%s"choices":[],"usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`+"\n\n", head)
	want.WriteString("data: [DONE]\n\n")
	if got != want.String() {
		t.Fatalf("stream differs from vLLM framing\n got: %q\nwant: %q", got, want.String())
	}
}

func TestChatSSEFramingByteForByte(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	msgs := []map[string]any{{"role": "user", "content": "hello"}}
	c := func() completion {
		code, raw := post(t, url+"/v1/chat/completions", map[string]any{"model": model, "messages": msgs, "max_tokens": 2, "ignore_eos": true, "temperature": 0})
		var c completion
		if code != http.StatusOK || json.Unmarshal(raw, &c) != nil {
			t.Fatalf("chat: %d %s", code, raw)
		}
		return c
	}()
	got, _ := rawStream(t, url+"/v1/chat/completions", map[string]any{"model": model, "messages": msgs, "max_tokens": 2,
		"ignore_eos": true, "temperature": 0, "stream": true}, "r2")
	m := createdRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no created field in %q", got)
	}
	head := `data: {"id":"chatcmpl-r2","object":"chat.completion.chunk","created":` + m[1] + `,"model":"sim-llama-3-8b",`
	words := strings.SplitAfter(c.Choices[0].Message.Content, " ") // "w1 " "w2": re-split to pieces
	pieces := []string{strings.TrimSuffix(words[0], " "), " " + words[1]}
	want := head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		head + `"choices":[{"index":0,"delta":{"content":"` + pieces[0] + `"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		head + `"choices":[{"index":0,"delta":{"content":"` + pieces[1] + `"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}` + "\n\n" +
		"data: [DONE]\n\n"
	if got != want {
		t.Fatalf("chat stream differs from vLLM framing\n got: %q\nwant: %q", got, want)
	}
}

func TestStreamedDeltasConcatenateToText(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	text := prompt(5, 30)
	full := complete(t, url, map[string]any{"model": model, "prompt": text, "max_tokens": 50, "temperature": 0})
	_, ev := streamPost(t, url+"/v1/completions", map[string]any{"model": model, "prompt": text, "max_tokens": 50, "temperature": 0, "stream": true})
	var cat strings.Builder
	chunks := 0
	for _, e := range ev[:len(ev)-1] {
		var c completion
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			t.Fatalf("chunk %q: %v", e.data, err)
		}
		cat.WriteString(c.Choices[0].Text)
		chunks++
	}
	if cat.String() != full.Choices[0].Text {
		t.Fatalf("streamed %q, non-streamed %q", cat.String(), full.Choices[0].Text)
	}
	if chunks != full.Usage.CompletionTokens {
		t.Fatalf("%d content chunks for %d tokens: want one chunk per token", chunks, full.Usage.CompletionTokens)
	}
	if ev[len(ev)-1].data != "[DONE]" {
		t.Fatalf("stream did not end with [DONE]: %q", ev[len(ev)-1].data)
	}
}
