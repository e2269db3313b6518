package trials

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A variant is one named map of overrides (`variants:`): where the matrix
// crosses independent values, variants list linked ones, such as a
// topology and the router settings it needs, so collocated and
// disaggregated deployments at equal engine count are one sweep on one
// request stream. Variants cross the matrix: every variant runs with every
// matrix combination, variant first.
type variant struct {
	name  string
	index int
	line  int
	// entries are the override keys (dotted or nested) and their values,
	// without the name.
	entries []*yaml.Node
	// paths are the dotted paths the variant writes, leaves of nested
	// mappings included, so a problem there can name the variant's key.
	paths []string
}

// topologyCounts replace each other: a variant that sets one of them
// replaces the base's counts rather than adding to them.
var topologyCounts = []string{"topology.replicas", "topology.prefill", "topology.decode"}

// parseVariants reads `variants:`. Problems go to p; a variant with a
// problem of its own is left out, so the others are still checked.
func parseVariants(n *yaml.Node, axes []axis, p *problems) []variant {
	n = deref(n)
	if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.addAt("variants", n.Line, "must be a non-empty list of mappings, each with a name and the keys it overrides")
		return nil
	}
	var out []variant
	seen := map[string]int{}
	for i, vn := range n.Content {
		vn = deref(vn)
		at := fmt.Sprintf("variants[%d]", i)
		if vn.Kind != yaml.MappingNode {
			p.addAt(at, vn.Line, "must be a mapping with a name and the keys it overrides")
			continue
		}
		v := variant{index: i, line: vn.Line}
		ok := true
		for j := 0; j+1 < len(vn.Content); j += 2 {
			k, val := vn.Content[j], vn.Content[j+1]
			switch {
			case k.Value == "name":
				v.name = deref(val).Value
				if deref(val).Kind != yaml.ScalarNode || !nameRE.MatchString(v.name) {
					p.addAt(at+".name", k.Line, "must be letters, digits, '.', '_' or '-' (got %q)", v.name)
					ok = false
				}
			case !matrixPathRE.MatchString(k.Value):
				p.addAt(at+"."+k.Value, k.Line, "must be a key or a dotted path of keys such as router.policy")
				ok = false
			case k.Value == "matrix" || k.Value == "variants" || strings.HasPrefix(k.Value, "matrix.") || strings.HasPrefix(k.Value, "variants."):
				p.addAt(at+"."+k.Value, k.Line, "cannot be set by a variant")
				ok = false
			default:
				v.entries = append(v.entries, k, val)
				v.paths = append(v.paths, leafPaths(k.Value, val)...)
			}
		}
		if v.name == "" && ok {
			p.addAt(at+".name", vn.Line, "required: it names the variant's trials (name/variant=NAME)")
			ok = false
		}
		if first, dup := seen[v.name]; dup && v.name != "" {
			p.addAt(at+".name", vn.Line, "repeats variants[%d]'s name %q", first, v.name)
			ok = false
		}
		seen[v.name] = i
		for _, path := range v.paths {
			for _, a := range axes {
				if overlaps(path, a.path) {
					p.addAt(at+"."+path, vn.Line, "is also varied by matrix.%s; set it in one place", a.path)
					ok = false
				}
			}
		}
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// leafPaths lists the dotted paths a value writes under key: the key
// itself for a scalar or list, every leaf for a mapping.
func leafPaths(key string, v *yaml.Node) []string {
	v = deref(v)
	if v == nil || v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return []string{key}
	}
	var out []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		out = append(out, leafPaths(key+"."+v.Content[i].Value, v.Content[i+1])...)
	}
	return out
}

// overlaps reports whether one dotted path is the other or lies under it.
func overlaps(a, b string) bool {
	return strings.HasPrefix(a+".", b+".") || strings.HasPrefix(b+".", a+".")
}

// apply merges the variant into tree: mappings merge key by key, anything
// else replaces the base's value (null unsets it). Setting one topology
// count drops the base's other counts, so {prefill: 2, decode: 2} replaces
// replicas: 4 instead of joining it.
func (v variant) apply(tree *yaml.Node) error {
	if slices.ContainsFunc(topologyCounts, v.writes) {
		for _, c := range topologyCounts {
			if !v.writes(c) {
				unset(tree, strings.Split(c, "."))
			}
		}
	}
	for i := 0; i+1 < len(v.entries); i += 2 {
		k, val := v.entries[i], v.entries[i+1]
		if err := mergePath(tree, strings.Split(k.Value, "."), clone(val), k.Line); err != nil {
			return fmt.Errorf("variants[%d].%s: %w", v.index, k.Value, err)
		}
	}
	return nil
}

// writes reports whether the variant writes path or something under it.
func (v variant) writes(path string) bool {
	return slices.ContainsFunc(v.paths, func(w string) bool { return overlaps(w, path) })
}

// rename gives a problem at a path the variant wrote the path the user
// wrote it under: topology.prefill → variants[2].topology.prefill.
func (v variant) rename(path string) string {
	for _, w := range v.paths {
		if within(path, w) {
			return fmt.Sprintf("variants[%d].%s", v.index, path)
		}
	}
	return path
}

// mergePath merges v into the mapping entry at keys, creating mappings on
// the way (they take line).
func mergePath(root *yaml.Node, keys []string, v *yaml.Node, line int) error {
	if cur, _ := lookup(root, strings.Join(keys, ".")); deref(cur) != nil && deref(cur).Kind == yaml.MappingNode && deref(v).Kind == yaml.MappingNode {
		v = deref(v)
		for i := 0; i+1 < len(v.Content); i += 2 {
			sub := append(slices.Clone(keys), v.Content[i].Value)
			if err := mergePath(root, sub, v.Content[i+1], v.Content[i].Line); err != nil {
				return err
			}
		}
		return nil
	}
	return setPath(root, keys, v, line)
}

// unset removes the mapping entry at keys, if there is one.
func unset(root *yaml.Node, keys []string) {
	m := deref(root)
	for _, k := range keys[:len(keys)-1] {
		_, m = child(m, k)
		if m = deref(m); m == nil || m.Kind != yaml.MappingNode {
			return
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == keys[len(keys)-1] {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}
