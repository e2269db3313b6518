package sim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

func TestErrorsUseOpenAIShape(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{Engine: engine.Config{MaxModelLen: 100}})
	long := strings.Repeat("the ", 90)
	cases := []struct {
		name, path string
		body       any
		status     int
		typ, param string
		msg        string
	}{
		{"malformed JSON", "/v1/completions", `{"model": "x", `, 400, "BadRequestError", "", "malformed JSON"},
		{"missing prompt", "/v1/completions", map[string]any{"model": model}, 400, "BadRequestError", "prompt", "prompt is required"},
		{"wrong-typed max_tokens", "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": "ten"}, 400, "BadRequestError", "max_tokens", "invalid type"},
		{"wrong-typed prompt", "/v1/completions", map[string]any{"prompt": map[string]any{"a": 1}}, 400, "BadRequestError", "prompt", "prompt must be"},
		{"wrong-typed messages", "/v1/chat/completions", map[string]any{"messages": "hi"}, 400, "BadRequestError", "messages", "invalid type"},
		{"missing messages", "/v1/chat/completions", map[string]any{"model": model}, 400, "BadRequestError", "messages", "messages is required"},
		{"unknown role", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "robot", "content": "x"}}}, 400, "BadRequestError", "messages[0].role", "unknown role"},
		{"unknown model", "/v1/completions", map[string]any{"model": "gpt-9", "prompt": "hi"}, 404, "NotFoundError", "model", "The model `gpt-9` does not exist."},
		{"context length", "/v1/completions", map[string]any{"prompt": long, "max_tokens": 20}, 400, "BadRequestError", "max_tokens",
			"This model's maximum context length is 100 tokens. However, you requested 110 tokens (90 in the messages, 20 in the completion)."},
		{"chat prompt fills context", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": long + "the the the the the the the the the"}}}, 400, "BadRequestError", "max_tokens",
			"This model's maximum context length is 100 tokens"},
		{"max_tokens zero", "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 0}, 400, "BadRequestError", "max_tokens", "at least 1"},
		{"negative temperature", "/v1/completions", map[string]any{"prompt": "hi", "temperature": -1}, 400, "BadRequestError", "temperature", "non-negative"},
		{"too many logprobs", "/v1/completions", map[string]any{"prompt": "hi", "logprobs": 21}, 400, "BadRequestError", "logprobs", "between 0 and 20"},
		{"too many top_logprobs", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}}, "logprobs": true, "top_logprobs": 21}, 400, "BadRequestError", "top_logprobs", "top_logprobs must be between 0 and 20"},
		{"chat logprobs not bool", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}}, "logprobs": 3}, 400, "BadRequestError", "logprobs", "boolean"},
		{"n > 1", "/v1/completions", map[string]any{"prompt": "hi", "n": 2}, 400, "BadRequestError", "n", "n must be 1"},
		{"stream options without stream", "/v1/completions", map[string]any{"prompt": "hi", "stream_options": map[string]any{"include_usage": true}}, 400, "BadRequestError", "stream_options", "stream=True"},
		{"token id out of vocabulary", "/v1/completions", map[string]any{"prompt": []int{1, 99999999}}, 400, "BadRequestError", "prompt", "out of vocabulary"},
		{"empty prompt", "/v1/completions", map[string]any{"prompt": ""}, 400, "BadRequestError", "prompt", "cannot be empty"},
		{"bad stop", "/v1/completions", map[string]any{"prompt": "hi", "stop": 5}, 400, "BadRequestError", "stop", "stop must be"},
		{"unknown route", "/v1/nothing", map[string]any{}, 404, "NotFoundError", "", "no route"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, raw := post(t, url+c.path, c.body)
			var e apiErr
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("error body is not JSON: %q", raw)
			}
			if code != c.status || e.Error.Type != c.typ || e.Error.Code != c.status || !strings.Contains(e.Error.Message, c.msg) {
				t.Fatalf("got %d %s, want %d type %s containing %q", code, raw, c.status, c.typ, c.msg)
			}
			if param := ""; e.Error.Param != nil && *e.Error.Param != c.param || e.Error.Param == nil && c.param != param {
				t.Fatalf("param = %v, want %q (%s)", e.Error.Param, c.param, raw)
			}
		})
	}
	// Nothing above may have hurt the server.
	if code, _ := get(t, url+"/health"); code != http.StatusOK {
		t.Fatalf("server unhealthy after bad requests: %d", code)
	}
}

func TestGarbageNeverCrashes(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	for _, body := range []string{"", "null", "[]", "{}", `{"prompt":null}`, `{"prompt":[[]]}`, `{"prompt":[[1],[2]]}`, `{"prompt":[]}`,
		`{"messages":[{}]}`, `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, `{"prompt":"x","max_tokens":1e99}`,
		`{"prompt":"x","logprobs":-1}`, `{"prompt":"x","seed":"s"}`, `{"prompt":"x","stop":[""]}`, `{"prompt":"x","min_tokens":-3}`,
		`{"prompt":"x","kv_transfer_params":7}`, "\x00\xff", `{"prompt":"x"}garbage`} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize", "/admin/faults"} {
			code, raw := post(t, url+path, body)
			if code != http.StatusOK && code != http.StatusBadRequest && code != http.StatusNotFound {
				t.Errorf("%s %q: status %d %s", path, body, code, raw)
			}
		}
	}
	if code, _ := get(t, url+"/health"); code != http.StatusOK {
		t.Fatal("server unhealthy after garbage")
	}
}
