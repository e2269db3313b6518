package trials

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Helpers over yaml.Node trees: the spec is kept as a node tree until it is
// decoded, so every error can name the line it comes from, also after a
// matrix value was spliced in.

// child returns the key and value nodes of key in mapping m.
func child(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// deref follows aliases and document nodes.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && (n.Kind == yaml.AliasNode || n.Kind == yaml.DocumentNode) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) > 0 {
			n = n.Content[0]
		} else {
			return nil
		}
	}
	return n
}

// splitPath turns "assert[1]" and "router.retry.max_retries" into segments;
// an index is its own segment ("[1]").
func splitPath(path string) []string {
	var segs []string
	for _, part := range strings.Split(path, ".") {
		for {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				break
			}
			if i > 0 {
				segs = append(segs, part[:i])
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				break
			}
			segs = append(segs, part[i:i+j+1])
			part = part[i+j+1:]
		}
		if part != "" {
			segs = append(segs, part)
		}
	}
	return segs
}

// lookup finds path in root. It returns the node (nil when the path is not
// in the document) and a line: the key's line for a mapping entry, the
// item's for a sequence entry, or the deepest existing ancestor's when the
// path is missing, so a missing required key points at its section.
func lookup(root *yaml.Node, path string) (*yaml.Node, int) {
	n := deref(root)
	line := 0
	if n != nil {
		line = n.Line
	}
	for _, seg := range splitPath(path) {
		n = deref(n)
		if n == nil {
			return nil, line
		}
		if strings.HasPrefix(seg, "[") {
			i, err := strconv.Atoi(strings.Trim(seg, "[]"))
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return nil, line
			}
			n = n.Content[i]
			line = n.Line
			continue
		}
		k, v := child(n, seg)
		if k == nil {
			return nil, line
		}
		n, line = v, k.Line
	}
	return n, line
}

// lineOf is lookup's line.
func lineOf(root *yaml.Node, path string) int {
	_, line := lookup(root, path)
	return line
}

// pathAtLine finds the deepest entry that starts on line, for decoder errors
// that carry only a line number. It returns "" when nothing is there.
func pathAtLine(root *yaml.Node, line int) string {
	best := ""
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		n = deref(n)
		if n == nil {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := joinPath(path, n.Content[i].Value)
				if n.Content[i].Line == line || n.Content[i+1].Line == line {
					best = p
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Line == line {
					best = p
				}
				walk(c, p)
			}
		}
	}
	walk(root, "")
	return best
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// clone deep-copies a node tree (aliases are resolved into copies, which is
// what decoding does anyway).
func clone(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return clone(n.Alias)
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = clone(k)
	}
	c.Anchor = ""
	return &c
}

// setPath sets the mapping entry at dotted path keys to v, creating mapping
// nodes on the way; created nodes take line so errors point at the matrix
// entry that caused them.
func setPath(root *yaml.Node, keys []string, v *yaml.Node, line int) error {
	m := root
	for i, key := range keys {
		if m.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping", strings.Join(keys[:i], "."))
		}
		k, cur := child(m, key)
		if i == len(keys)-1 {
			if k != nil {
				k.Line = line // errors about the value point at the matrix
				for j := 0; j+1 < len(m.Content); j += 2 {
					if m.Content[j] == k {
						m.Content[j+1] = v
					}
				}
				return nil
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: line}, v)
			return nil
		}
		if cur == nil || (cur.Kind == yaml.ScalarNode && cur.Tag == "!!null") {
			next := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
			if k == nil {
				m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: line}, next)
			} else {
				for j := 0; j+1 < len(m.Content); j += 2 {
					if m.Content[j] == k {
						m.Content[j+1] = next
					}
				}
			}
			cur = next
		}
		m = deref(cur)
	}
	return nil
}
