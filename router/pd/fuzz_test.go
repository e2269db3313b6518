package pd_test

import (
	"encoding/json"
	"testing"

	"github.com/autoinfer/autoinfer/router/pd"
)

// PD bodies: whatever a client sends, a body that parses yields prefill and
// decode bodies that are JSON objects carrying what pd.md says, and the
// token estimate never panics or goes negative.
func FuzzPDBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"p","max_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":9}`,
		`{"prompt":[[1,2],[3]]}`, `{"prompt":null,"messages":7}`, `{"stream":"yes"}`, `[]`, `{`, `{"prompt":` + "[[[[[[[[[[1]]]]]]]]]]" + `}`,
	} {
		f.Add([]byte(s), []byte(`{"remote_block_ids":[1],"remote_engine_id":"e"}`))
	}
	f.Fuzz(func(t *testing.T, body, kv []byte) {
		b, err := pd.ParseBody(body)
		if err != nil {
			return
		}
		var prefill map[string]json.RawMessage
		if err := json.Unmarshal(b.Prefill(), &prefill); err != nil {
			t.Fatalf("prefill body is not a JSON object: %v", err)
		}
		if string(prefill["max_tokens"]) != "1" || string(prefill["stream"]) != "false" || prefill["kv_transfer_params"] == nil {
			t.Fatalf("prefill body %s", b.Prefill())
		}
		if json.Valid(kv) {
			var decode map[string]json.RawMessage
			if err := json.Unmarshal(b.Decode(kv), &decode); err != nil {
				t.Fatalf("decode body is not a JSON object: %v", err)
			}
		}
		if n := b.EstimateTokens(); n < 0 {
			t.Fatalf("estimate %d", n)
		}
		_ = b.Streamed()
	})
}

// Prefill answers and the cached-token patch: any answer decodes without a
// panic, and the patch turns valid JSON into valid JSON.
func FuzzPDAnswer(f *testing.F) {
	for _, s := range []string{
		`{"kv_transfer_params":{"a":1},"usage":{"prompt_tokens_details":{"cached_tokens":8}}}`,
		`{"usage":{"prompt_tokens":3}}`, `{"usage":null}`, `{"usage":{"prompt_tokens_details":[]}}`, `7`, `{`,
	} {
		f.Add([]byte(s), int64(4))
	}
	f.Fuzz(func(t *testing.T, raw []byte, cached int64) {
		var a pd.Answer
		if json.Unmarshal(raw, &a) == nil {
			_, _ = a.KV(), a.CachedTokens()
		}
		out := pd.WithCachedTokens(cached)(raw)
		if json.Valid(raw) && !json.Valid(out) {
			t.Fatalf("patch turned %s into invalid %s", raw, out)
		}
	})
}
