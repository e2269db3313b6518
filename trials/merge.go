package trials

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// YAML merge keys (`engine: {<<: *eng, max_num_seqs: 16}`) are resolved in
// the node tree before anything walks it, as yaml.v3's decoder resolves
// them when it decodes: the key checks, the matrix and the variants then see
// the merged mapping, not a key named "<<". A key written in the mapping
// wins over a merged one; of several merged mappings (`<<: [*a, *b]`) the
// earlier wins.

// isMergeKey reports whether k is the merge key: a plain "<<" resolves to
// the !!merge tag (a quoted one is an ordinary string key).
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// resolveMerges rewrites every mapping under n that holds merge keys into
// the merged mapping, in place. Nodes reached twice (through aliases) are
// resolved once. expandedNodes has refused alias cycles and bounded the
// expansion, so this terminates and stays small.
func resolveMerges(n *yaml.Node, path string, done map[*yaml.Node]bool) *FieldError {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || done[n] {
		return nil
	}
	done[n] = true
	for i, ch := range n.Content {
		p := path
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 1 && !isMergeKey(n.Content[i-1]) {
				p = joinPath(path, n.Content[i-1].Value)
			}
		case yaml.SequenceNode:
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		if err := resolveMerges(ch, p, done); err != nil {
			return err
		}
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	return merge(n, path)
}

// merge replaces m's merge entries with the entries they bring that m does
// not set itself (m's merge sources are already resolved).
func merge(m *yaml.Node, path string) *FieldError {
	var own, sources []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; isMergeKey(k) {
			srcs, err := mergeSources(v, path, k.Line)
			if err != nil {
				return err
			}
			sources = append(sources, srcs...)
		} else {
			own = append(own, k, v)
		}
	}
	if len(own) == len(m.Content) {
		return nil
	}
	seen := map[string]bool{}
	for i := 0; i < len(own); i += 2 {
		seen[own[i].Value] = true
	}
	for _, src := range sources {
		for j := 0; j+1 < len(src.Content); j += 2 {
			if k := src.Content[j]; !seen[k.Value] {
				seen[k.Value] = true
				own = append(own, k, src.Content[j+1])
			}
		}
	}
	m.Content = own
	return nil
}

// mergeSources lists the mappings a merge key's value names: one mapping
// (usually an alias to one) or a sequence of them.
func mergeSources(v *yaml.Node, path string, line int) ([]*yaml.Node, *FieldError) {
	bad := &FieldError{Path: joinPath(path, "<<"), Line: line, Msg: "a merge key (<<) takes a mapping or a list of mappings"}
	v = deref(v)
	switch {
	case v == nil:
		return nil, bad
	case v.Kind == yaml.MappingNode:
		return []*yaml.Node{v}, nil
	case v.Kind != yaml.SequenceNode:
		return nil, bad
	}
	out := make([]*yaml.Node, 0, len(v.Content))
	for _, item := range v.Content {
		if item = deref(item); item == nil || item.Kind != yaml.MappingNode {
			return nil, bad
		}
		out = append(out, item)
	}
	return out, nil
}
