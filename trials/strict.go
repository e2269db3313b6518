package trials

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Unknown keys are errors. yaml.Decoder.KnownFields does this for a byte
// stream, but a matrix trial is a node tree with values spliced in, and
// Node.Decode has no strict mode; so the tree is walked against the Go
// types here, which also gives every unknown key its full path and a
// suggestion.

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// checkKeys reports every mapping key in n that type t does not have, and
// every number with a fraction where t wants an integer: the decoder would
// truncate `replicas: 2.5` to 2 without a word.
func checkKeys(n *yaml.Node, t reflect.Type, path string, p *problems) {
	n = deref(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == nodeType || t == durationType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return // custom decoders check their own input
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if err := wholeNumber(n); err != nil {
			p.addAt(path, n.Line, "%v", err)
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type mismatch
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			kp := joinPath(path, key)
			ft, ok := fields[key]
			if !ok {
				p.addAt(kp, n.Content[i].Line, "unknown key%s", suggest(key, fields))
				continue
			}
			checkKeys(n.Content[i+1], ft, kp, p)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value), p)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), p)
		}
	}
}

// wholeNumber rejects a YAML float that is not a whole number (2.5, .inf)
// where an integer is wanted; 2.0 and 1e3 are whole and read as 2 and
// 1000. Anything else is left to the decoder's type check.
func wholeNumber(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
		return nil
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) {
		return fmt.Errorf("must be a whole number, got %s", n.Value)
	}
	return nil
}

// yamlFields maps the YAML keys of struct t to their types, with inlined
// embedded structs flattened as the decoder does.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			for k, v := range yamlFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// suggest returns `; did you mean "x"?` for the closest known key within
// two edits, or "".
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for k := range fields {
		if d := editDistance(key, k); d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance of two short keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
