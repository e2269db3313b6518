package trials

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target"
)

// Target says where workers come from: a kind and that kind's options.
// The kinds come from a registry (adapter/targetkinds) handed to Parse, so
// this package knows no target implementation; each kind's package exports
// its options type, defaults and validation.
type Target struct {
	Kind string
	// Hardware labels what the workers run on (target.hardware, e.g.
	// 8xH100-SXM). Required for kinds that run real servers: rows measured
	// on different hardware are never compared. Simulated workers are
	// identified by their profile instead.
	Hardware string
	// Options are the section's other keys, decoded into the kind's type;
	// nil when the kind is unknown.
	Options target.Options
}

// UnmarshalYAML reads only the kind: the options need the kind registry,
// which decodeTarget has.
func (t *Target) UnmarshalYAML(n *yaml.Node) error {
	var k struct {
		Kind     string `yaml:"kind"`
		Hardware string `yaml:"hardware"`
	}
	if err := n.Decode(&k); err != nil {
		return err
	}
	t.Kind, t.Hardware = k.Kind, k.Hardware
	return nil
}

// MarshalJSON writes one object, the kind first and then the options' own
// keys, so the spec hash covers what the target runs.
func (t Target) MarshalJSON() ([]byte, error) {
	kind, err := json.Marshal(t.Kind)
	if err != nil {
		return nil, err
	}
	out := []byte(`{"kind":` + string(kind))
	if t.Hardware != "" {
		hw, err := json.Marshal(t.Hardware)
		if err != nil {
			return nil, err
		}
		out = append(append(out, `,"hardware":`...), hw...)
	}
	if t.Options != nil {
		opts, err := json.Marshal(t.Options)
		if err != nil {
			return nil, fmt.Errorf("encoding target options: %w", err)
		}
		if len(opts) < 2 || opts[0] != '{' {
			return nil, fmt.Errorf("target options of kind %s encode as %s, want an object", t.Kind, opts)
		}
		if inner := opts[1 : len(opts)-1]; len(inner) > 0 {
			out = append(append(out, ','), inner...)
		}
	}
	return append(out, '}'), nil
}

// decodeTarget picks the kind (the registry's first when the spec names
// none), checks the section's keys against it and decodes its options into
// t. Unknown keys and type errors go to p, like the rest of the spec's; an
// unknown kind and keys of another kind are validation problems, which go
// to v.
func decodeTarget(tree *yaml.Node, t *Target, kinds []target.Kind, p, v *problems) {
	if len(kinds) == 0 {
		v.add("target.kind", "no target kinds are registered")
		return
	}
	if t.Kind == "" {
		t.Kind = kinds[0].Name
	}
	i := slices.IndexFunc(kinds, func(k target.Kind) bool { return k.Name == t.Kind })
	if i < 0 {
		v.add("target.kind", "must be one of %s (got %q)", strings.Join(kindNames(kinds), ", "), t.Kind)
	}
	node, _ := lookup(tree, "target")
	if node = deref(node); node == nil || node.Kind != yaml.MappingNode {
		if i >= 0 {
			t.Options = kinds[i].New()
		}
		return
	}
	owners := keyOwners(kinds)
	var fields map[string]reflect.Type
	if i >= 0 {
		fields = yamlFields(optionsType(kinds[i]))
	}
	for j := 0; j+1 < len(node.Content); j += 2 {
		key := node.Content[j].Value
		path := "target." + key
		if key == "kind" || key == "hardware" {
			continue
		}
		if ft, ok := fields[key]; ok {
			checkKeys(node.Content[j+1], ft, path, p)
			continue
		}
		if owner := owners[key]; len(owner) > 0 {
			if i >= 0 {
				v.addAt(path, node.Content[j].Line, "%s (kind is %s)", onlyFor(owner), t.Kind)
			}
			continue
		}
		p.addAt(path, node.Content[j].Line, "unknown key%s", suggest(key, allKeys(owners)))
	}
	if i < 0 {
		return
	}
	opts := kinds[i].New()
	if err := node.Decode(opts); err != nil {
		decodeErrors(tree, err, p)
	}
	t.Options = opts
}

// optionsType is the struct type behind a kind's options.
func optionsType(k target.Kind) reflect.Type {
	t := reflect.TypeOf(k.New())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// keyOwners maps every option key to the kinds that have it.
func keyOwners(kinds []target.Kind) map[string][]string {
	owners := map[string][]string{}
	for _, k := range kinds {
		for key := range yamlFields(optionsType(k)) {
			owners[key] = append(owners[key], k.Name)
		}
	}
	return owners
}

// allKeys is every key a target section may have, for suggestions.
func allKeys(owners map[string][]string) map[string]reflect.Type {
	keys := map[string]reflect.Type{"kind": nil}
	for k := range owners {
		keys[k] = nil
	}
	return keys
}

// onlyFor says which kinds a key belongs to: "only for kind sim", "only
// for kinds static and process".
func onlyFor(kinds []string) string {
	if len(kinds) == 1 {
		return "only for kind " + kinds[0]
	}
	return "only for kinds " + strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
}

func kindNames(kinds []target.Kind) []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}
