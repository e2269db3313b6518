package pd

import (
	"encoding/json"
	"fmt"

	"github.com/autoinfer/autoinfer/router/prompt"
)

// Body is a client's inference body as top-level fields, kept as raw JSON
// so every field the router does not touch reaches the workers unchanged.
type Body map[string]json.RawMessage

// ParseBody reads a JSON object body.
func ParseBody(body []byte) (Body, error) {
	var b Body
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("parsing request body: %w", err)
	}
	return b, nil
}

// prefillKVParams is what a prefill leg asks for (pd.md step 2): prefill,
// keep the KV for a remote decode, and say where it is.
var prefillKVParams = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,` +
	`"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

// Prefill is the prefill leg's body: the client's body capped at one token
// (max_completion_tokens only if the client sent it), not streamed, without
// stream_options or minimum lengths, asking for remote decode. vLLM returns
// kv_transfer_params only when the engine stopped on the length cap, hence
// max_tokens 1.
func (b Body) Prefill() []byte {
	out := make(Body, len(b)+2)
	for k, v := range b {
		out[k] = v
	}
	one := json.RawMessage("1")
	out["max_tokens"] = one
	if _, ok := b["max_completion_tokens"]; ok {
		out["max_completion_tokens"] = one
	}
	out["stream"] = json.RawMessage("false")
	for _, k := range []string{"stream_options", "min_tokens", "min_completion_tokens"} {
		delete(out, k)
	}
	out["kv_transfer_params"] = prefillKVParams
	return out.marshal()
}

// Decode is the client's body with the prefill engine's kv_transfer_params
// copied in verbatim (pd.md step 4).
func (b Body) Decode(kv json.RawMessage) []byte {
	out := make(Body, len(b)+1)
	for k, v := range b {
		out[k] = v
	}
	out["kv_transfer_params"] = kv
	return out.marshal()
}

func (b Body) marshal() []byte {
	raw, err := json.Marshal(map[string]json.RawMessage(b))
	if err != nil {
		// Every value came out of json.Unmarshal or is a constant: valid JSON.
		panic(fmt.Sprintf("pd: re-encoding a parsed body: %v", err))
	}
	return raw
}

// EstimateTokens is routing_threshold's measure of a prompt
// (production-stack PR 890): characters / 4 for text (a prompt string or
// list of strings, the text of chat messages and their text parts), plus
// the length of token-id prompts. It reads each value once (router/prompt),
// so its cost is linear in the body; what lies deeper than
// prompt.MaxDepth is not counted (the router refuses such bodies first).
func (b Body) EstimateTokens() int {
	var total prompt.Counts
	add := func(raw json.RawMessage) {
		c, _ := prompt.Count(raw)
		total.Chars += c.Chars
		total.IDs += c.IDs
	}
	add(b["prompt"])
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(b["messages"], &msgs) == nil {
		for _, m := range msgs {
			add(m.Content)
		}
	}
	return total.Chars/4 + total.IDs
}

// Streamed reports whether the client asked for a stream.
func (b Body) Streamed() bool {
	var s bool
	return json.Unmarshal(b["stream"], &s) == nil && s
}
