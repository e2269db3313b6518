package stale

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Change is one router setting that differs, by dotted path.
type Change struct {
	Path string // e.g. router.retry.max_retries
	Old  string // "(unset)" when absent
	New  string
}

// String renders "router.policy: round_robin→cache_aware".
func (c Change) String() string { return c.Path + ": " + c.Old + "→" + c.New }

// Reason joins changes into one stale reason, "; "-separated.
func Reason(changes []Change) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

const unset = "(unset)"

// Diff lists how the router config changed from before to after, ignoring
// addresses, in path order. Objects are compared key by key; anything else
// (lists, scalars) as a whole value.
func Diff(before, after json.RawMessage) ([]Change, error) {
	var a, b map[string]any
	var err error
	if HasRouter(before) {
		if a, err = decodeObject(before); err != nil {
			return nil, err
		}
	}
	if HasRouter(after) {
		if b, err = decodeObject(after); err != nil {
			return nil, err
		}
	}
	var out []Change
	diffObjects("router", a, b, &out)
	return out, nil
}

func diffObjects(prefix string, a, b map[string]any, out *[]Change) {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := prefix + "." + k
		av, aok := a[k]
		bv, bok := b[k]
		am, aIsObj := av.(map[string]any)
		bm, bIsObj := bv.(map[string]any)
		switch {
		case aIsObj && bIsObj:
			diffObjects(path, am, bm, out)
		case aok && bok && reflect.DeepEqual(av, bv):
		default:
			*out = append(*out, Change{Path: path, Old: render(av, aok), New: render(bv, bok)})
		}
	}
}

// render shows strings bare and everything else as compact JSON.
func render(v any, present bool) string {
	if !present {
		return unset
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}
