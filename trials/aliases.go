package trials

import (
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// A spec is read into a yaml.Node tree, which keeps an alias as one node
// pointing at its anchor; expanding the tree (clone, the matrix, the key
// checks) copies each alias's target. Nested aliases make that exponential:
// a few hundred bytes of "billion laughs" would expand to billions of nodes.
// So before anything walks the tree, the expansion is counted without being
// performed, node by node as yaml.v3's decoder counts its decode operations,
// and the spec is refused when the decoder would refuse it ("excessive
// aliasing") or when it expands to more nodes than any spec needs.

// Size limits of a spec document.
const (
	// MaxSpecBytes bounds a spec file: specs are a few KiB; traces and
	// datasets live in files of their own.
	MaxSpecBytes = 1 << 20
	// MaxSpecNodes bounds the YAML nodes of a spec with every alias
	// expanded.
	MaxSpecNodes = 100_000
	// maxMatrixNodes bounds the nodes of all of a matrix's trials together
	// (each trial is its own expanded copy of the spec).
	maxMatrixNodes = 1_000_000
)

// yaml.v3's decoder limits (decode.go): above 1000 decode operations of
// which more than 100 come from aliases, the share from aliases may be at
// most 99% up to 400,000 operations, falling linearly to 10% at 4,000,000.
const (
	aliasRatioLow  = 400_000
	aliasRatioHigh = 4_000_000
)

func allowedAliasRatio(decoded int) float64 {
	switch {
	case decoded <= aliasRatioLow:
		return 0.99
	case decoded >= aliasRatioHigh:
		return 0.10
	}
	return 0.99 - 0.89*float64(decoded-aliasRatioLow)/float64(aliasRatioHigh-aliasRatioLow)
}

// aliasCount walks a document as the decoder would visit it, expanding
// aliases by memoized size only, so it runs in time linear in the document.
type aliasCount struct {
	sizes   map[*yaml.Node]int  // expanded size of a node (capped at MaxSpecNodes+1)
	active  map[*yaml.Node]bool // nodes being sized: an alias back to one is a cycle
	decoded int                 // decode operations so far
	aliased int                 // of which inside an alias
}

// expandedNodes counts the nodes of doc with every alias expanded and
// refuses a document the decoder would refuse for its aliasing, one with an
// alias to its own ancestor, or one larger than MaxSpecNodes. The error
// names the alias (its path and line) where a limit was crossed.
func expandedNodes(doc *yaml.Node) (int, *FieldError) {
	c := &aliasCount{sizes: map[*yaml.Node]int{}, active: map[*yaml.Node]bool{}}
	if err := c.walk(doc, ""); err != nil {
		return 0, err
	}
	return c.decoded, nil
}

// walk visits n outside any alias, in document order.
func (c *aliasCount) walk(n *yaml.Node, path string) *FieldError {
	if n == nil {
		return nil
	}
	c.decoded++
	if n.Kind == yaml.AliasNode {
		// Inside an alias every node counts as aliased, so the decoder's
		// ratio only grows while it expands one: checking at its end is
		// checking at its worst point.
		size, err := c.size(n.Alias, path, n)
		if err != nil {
			return err
		}
		c.decoded += size
		c.aliased += size
		return c.check(path, n)
	}
	if err := c.check(path, n); err != nil {
		return err
	}
	for i, ch := range n.Content {
		p := path
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 1 {
				p = joinPath(path, n.Content[i-1].Value)
			}
		case yaml.SequenceNode:
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		if err := c.walk(ch, p); err != nil {
			return err
		}
	}
	return nil
}

// size is the number of decode operations n expands to; from is the alias
// being expanded, for the error.
func (c *aliasCount) size(n *yaml.Node, path string, from *yaml.Node) (int, *FieldError) {
	if n == nil {
		return 0, nil
	}
	if s, ok := c.sizes[n]; ok {
		return s, nil
	}
	if c.active[n] {
		return 0, &FieldError{Path: path, Line: from.Line, Msg: fmt.Sprintf("alias *%s refers to a node that contains it", from.Value)}
	}
	c.active[n] = true
	defer delete(c.active, n)
	s := 1
	if n.Kind == yaml.AliasNode {
		inner, err := c.size(n.Alias, path, n)
		if err != nil {
			return 0, err
		}
		s += inner
	}
	for _, ch := range n.Content {
		inner, err := c.size(ch, path, from)
		if err != nil {
			return 0, err
		}
		s = min(s+inner, MaxSpecNodes+1)
	}
	s = min(s, MaxSpecNodes+1)
	c.sizes[n] = s
	return s, nil
}

// check applies the limits after a visit; n is the node just visited.
func (c *aliasCount) check(path string, n *yaml.Node) *FieldError {
	what := "the spec"
	if n.Kind == yaml.AliasNode {
		what = "alias *" + n.Value
	}
	switch {
	case c.aliased > 100 && c.decoded > 1000 && float64(c.aliased)/float64(c.decoded) > allowedAliasRatio(c.decoded):
		return &FieldError{Path: path, Line: n.Line, Msg: fmt.Sprintf(
			"YAML aliases expand too much: with %s, %d of %d nodes come from aliases (yaml.v3 allows %.0f%%)",
			what, c.aliased, c.decoded, 100*allowedAliasRatio(c.decoded))}
	case c.decoded > MaxSpecNodes:
		return &FieldError{Path: path, Line: n.Line, Msg: fmt.Sprintf(
			"with %s the spec expands to more than %d YAML nodes (aliases included)", what, MaxSpecNodes)}
	}
	return nil
}

// readSpec reads a spec file of at most MaxSpecBytes.
func readSpec(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	return data, nil // parse refuses more than MaxSpecBytes
}

// trialCount is the number of trials the axes expand to (parseMatrix has
// bounded it).
func trialCount(axes []axis) int {
	n := 1
	for _, a := range axes {
		n *= len(a.values)
	}
	return n
}
