package stale

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// addressKeys are router config keys that locate this trial's processes
// (free ports, worker URLs) rather than describe how the router behaves.
func addressKeys() []string {
	return []string{"host", "port", "worker_urls", "prefill", "decode"}
}

// HasRouter reports whether a row's router config describes a router: an
// empty value, null or {} means the trial ran without one.
func HasRouter(router json.RawMessage) bool {
	t := bytes.TrimSpace(router)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("{}"))
}

// Identity returns the router config as canonical JSON (sorted keys, no
// whitespace) without its address keys; two configs with equal identities
// route identically. A config without a router has an empty identity.
func Identity(router json.RawMessage) ([]byte, error) {
	if !HasRouter(router) {
		return nil, nil
	}
	m, err := decodeObject(router)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m) // encoding/json sorts map keys
}

// Canonical returns any JSON value re-encoded with sorted keys, no
// whitespace and numbers in shortest form (0.30 and 0.3 are one value), so
// equal configs have equal bytes and equal hashes.
func Canonical(raw json.RawMessage) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("canonicalising JSON: %w", err)
	}
	return json.Marshal(v)
}

func decodeObject(router json.RawMessage) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(router, &m); err != nil {
		return nil, fmt.Errorf("decoding router config: %w", err)
	}
	for _, k := range addressKeys() {
		delete(m, k)
	}
	return m, nil
}
