package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
)

// commonKnobs copies the flags of the workload keys every dataset takes:
// all of them (dataset flags), or only those given (over a --workload-file).
func (f *benchFlags) commonKnobs(w *driver.Workload, all bool) error {
	set := func(flag string) bool { return all || f.fs.Changed(flag) }
	if set("top-p") {
		w.TopP = f.topP
	}
	if set("top-k") {
		w.TopK = f.topK
	}
	if set("min-p") {
		w.MinP = f.minP
	}
	if set("tokenizer") {
		w.Tokenizer = f.tokenizer
	}
	if set("request-id-prefix") {
		w.RequestIDPrefix = f.requestIDPrefix
	}
	if set("max-seconds") {
		w.MaxSeconds = f.maxSeconds
	}
	if f.extraBody != "" {
		extra, err := parseExtraBody(f.extraBody)
		if err != nil {
			return err
		}
		w.ExtraBody = extra
	}
	return nil
}

// parseExtraBody reads --extra-body: one JSON object.
func parseExtraBody(s string) (map[string]any, error) {
	var extra map[string]any
	if err := json.Unmarshal([]byte(s), &extra); err != nil || extra == nil {
		return nil, usageErr("--extra-body: want a JSON object, got %q (%v)", s, err)
	}
	return extra, nil
}

// keyed puts prefix before the key of each joined problem of err.
func keyed(prefix string, err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, fmt.Errorf("%s%w", prefix, e))
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("%s%w", prefix, err)
}

// parseHeaders reads repeated --header KEY:VALUE (or KEY=VALUE: vllm's
// form), splitting at the first ':' or '=', whichever comes first.
func parseHeaders(items []string) (map[string]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, it := range items {
		i := strings.IndexAny(it, ":=")
		if i <= 0 {
			return nil, usageErr("--header: want KEY:VALUE or KEY=VALUE, got %q", it)
		}
		out[strings.TrimSpace(it[:i])] = strings.TrimSpace(it[i+1:])
	}
	return out, nil
}

// parseMetadata reads repeated --metadata KEY=VALUE.
func parseMetadata(items []string) (map[string]string, error) {
	out := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErr("--metadata: want KEY=VALUE, got %q", it)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

// withMetadata adds metadata keys to a result object, refusing to
// overwrite one of the result's own keys.
func withMetadata(result []byte, meta map[string]string) ([]byte, error) {
	if len(meta) == 0 {
		return result, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, fmt.Errorf("adding metadata: %w", err)
	}
	// The result's keys keep their order; metadata follows, sorted.
	b := bytes.TrimRight(result, "}\n")
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		if _, ok := m[k]; ok {
			return nil, usageErr("--metadata: %q is a result key", k)
		}
		b = fmt.Appendf(b, ",%s:%s", strconv.Quote(k), strconv.Quote(meta[k]))
	}
	return append(b, "}\n"...), nil
}
