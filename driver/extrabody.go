package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// mergeBody puts extra's keys into the JSON object body, as vllm bench
// serve's --extra-body does (payload.update): a key the body has keeps its
// place with extra's value, new keys follow in sorted order. The output is
// a pure function of its inputs, so streams stay byte-reproducible.
func mergeBody(body []byte, extra map[string]any) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		return nil, fmt.Errorf("extra_body: reading body: %w", err)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	seen := map[string]bool{}
	write := func(k string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("extra_body: %s: %w", k, err)
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.WriteString(strconv.Quote(k))
		out.WriteByte(':')
		out.Write(b)
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("extra_body: reading body: %w", err)
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("extra_body: reading body: %w", err)
		}
		seen[k] = true
		var v any = raw
		if x, ok := extra[k]; ok {
			v = x
		}
		if err := write(k, v); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !seen[k] {
			if err := write(k, extra[k]); err != nil {
				return nil, err
			}
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
