package pd

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Answer is what the router reads from a prefill engine's answer (decode it
// with json.Unmarshal).
type Answer struct {
	KVParams json.RawMessage `json:"kv_transfer_params"`
	Usage    *struct {
		Details *struct {
			Cached *int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// KV returns the kv_transfer_params the engine returned, nil when there are
// none (it hit EOS on its one token: the decode engine prefills locally).
func (a Answer) KV() json.RawMessage {
	if isNull(a.KVParams) {
		return nil
	}
	return a.KVParams
}

// CachedTokens is usage.prompt_tokens_details.cached_tokens, nil if absent.
func (a Answer) CachedTokens() *int64 {
	if a.Usage == nil || a.Usage.Details == nil {
		return nil
	}
	return a.Usage.Details.Cached
}

// WithCachedTokens returns a patch for the decode engine's non-streaming
// answer: when its usage lacks prompt_tokens_details.cached_tokens, the
// prefill leg's value is filled in (pd.md step 6). Anything it cannot parse
// is returned unchanged.
func WithCachedTokens(cached int64) func([]byte) []byte {
	return func(body []byte) []byte {
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil || isNull(top["usage"]) {
			return body
		}
		var usage map[string]json.RawMessage
		if json.Unmarshal(top["usage"], &usage) != nil {
			return body
		}
		details := map[string]json.RawMessage{}
		if !isNull(usage["prompt_tokens_details"]) && json.Unmarshal(usage["prompt_tokens_details"], &details) != nil {
			return body
		}
		if !isNull(details["cached_tokens"]) {
			return body
		}
		details["cached_tokens"] = json.RawMessage(fmt.Sprint(cached))
		usage["prompt_tokens_details"], _ = json.Marshal(details)
		top["usage"], _ = json.Marshal(usage)
		out, err := json.Marshal(top)
		if err != nil {
			return body
		}
		return out
	}
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
