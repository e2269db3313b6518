package pd_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoinfer/autoinfer/router/pd"
)

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

// pd.md step 2 for the prefill leg, step 4 for the decode leg; the router's
// TestPDPrefillBodyMatchesPDMD checks the same bodies as workers receive them.
func TestPrefillAndDecodeBodies(t *testing.T) {
	t.Parallel()
	client := `{"model":"m","prompt":"p","max_tokens":50,"stream":true,"stream_options":{"include_usage":true},` +
		`"min_tokens":5,"min_completion_tokens":5,"user":"u1"}`
	b, err := pd.ParseBody([]byte(client))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "m", "prompt": "p", "max_tokens": 1.0, "stream": false, "user": "u1",
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
			"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}}
	if diff := cmp.Diff(want, decode(t, b.Prefill())); diff != "" {
		t.Errorf("prefill body (-want +got):\n%s", diff)
	}
	if _, ok := decode(t, b.Prefill())["max_completion_tokens"]; ok {
		t.Error("prefill body sets max_completion_tokens the client did not send")
	}
	kv := json.RawMessage(`{"remote_block_ids":[1,2],"remote_engine_id":"e"}`)
	wantD := decode(t, []byte(client))
	wantD["kv_transfer_params"] = map[string]any{"remote_block_ids": []any{1.0, 2.0}, "remote_engine_id": "e"}
	if diff := cmp.Diff(wantD, decode(t, b.Decode(kv))); diff != "" {
		t.Errorf("decode body (-want +got):\n%s", diff)
	}
	if !b.Streamed() {
		t.Error("Streamed() = false for a streaming body")
	}
	if _, err := pd.ParseBody([]byte(`[1]`)); err == nil {
		t.Error("ParseBody accepted a JSON array")
	}
}

func TestAnswerAndCachedTokens(t *testing.T) {
	t.Parallel()
	var a pd.Answer
	if err := json.Unmarshal([]byte(`{"kv_transfer_params":null,"usage":{"prompt_tokens_details":{"cached_tokens":8}}}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.KV() != nil {
		t.Errorf("KV() = %s for null params, want nil", a.KV())
	}
	if c := a.CachedTokens(); c == nil || *c != 8 {
		t.Errorf("CachedTokens() = %v, want 8", c)
	}
	patch := pd.WithCachedTokens(8)
	for in, want := range map[string]string{
		`{"usage":{"prompt_tokens":9}}`:                           `{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}`,
		`{"usage":{"prompt_tokens_details":{"cached_tokens":2}}}`: `{"usage":{"prompt_tokens_details":{"cached_tokens":2}}}`,
		`{"usage":null}`: `{"usage":null}`,
		`not json`:       `not json`,
	} {
		if got := patch([]byte(in)); string(got) != want {
			t.Errorf("patch(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	if id := pd.RequestID(pd.ConnectorNIXL, "client-1", "n", "http://p:1", "http://d:2"); id != "client-1" {
		t.Errorf("nixl id %q, want the client's", id)
	}
	nonce := pd.NewNonce()
	id := pd.RequestID(pd.ConnectorNCCL, "client-1", nonce, "http://10.0.0.1:8100", "http://10.0.0.2:8200")
	if !regexp.MustCompile(`^___prefill_addr_10\.0\.0\.1:8100___decode_addr_10\.0\.0\.2:8200_[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("nccl id %q", id)
	}
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"prompt":"abcdefgh"}`, 2},
		{`{"prompt":"abcdefghijk"}`, 2},   // 11 chars / 4
		{`{"prompt":"ééééé"}`, 1},         // characters, not bytes
		{`{"prompt":["abcd","efgh"]}`, 2}, // list of strings
		{`{"prompt":[1,2,3,4,5]}`, 5},     // token ids: their count
		{`{"prompt":[[1,2,3],[4,5]]}`, 5}, // lists of token ids
		{`{"messages":[{"role":"user","content":"abcdefgh"},{"role":"assistant","content":"abcd"}]}`, 3},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"abcdefgh"},{"type":"image_url","image_url":{"url":"http://x/abcdefghijklmnop"}}]}]}`, 2},
		{`{"model":"m"}`, 0},
	} {
		b, err := pd.ParseBody([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := b.EstimateTokens(); got != tc.want {
			t.Errorf("EstimateTokens(%s) = %d, want %d", tc.body, got, tc.want)
		}
	}
}
