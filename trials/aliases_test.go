package trials

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// laughs is a billion-laughs spec: each level lists the one above nine
// times, so level n expands to 9^n strings from a few hundred bytes.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString(minimal)
	b.WriteString("extra:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [*l%d, *l%[3]d, *l%[3]d, *l%[3]d, *l%[3]d, *l%[3]d, *l%[3]d, *l%[3]d, *l%[3]d]\n", i, i, i-1)
	}
	return b.String()
}

// The billion-laughs spec is refused before its aliases are expanded, with
// an error that names the alias where the expansion crossed the limit.
// (Expanding it would take 9^9 nodes: the test would not finish.)
func TestAliasBombRefused(t *testing.T) {
	spec := laughs(9)
	if len(spec) > 1024 {
		t.Fatalf("the bomb is %d bytes; it should be small", len(spec))
	}
	fields := specErr(t, spec)
	if len(fields) != 1 {
		t.Fatalf("got %d problems, want the alias one: %v", len(fields), fields)
	}
	f := fields[0]
	if !strings.HasPrefix(f.Path, "extra.l") || f.Line == 0 || !strings.Contains(f.Msg, "aliases expand too much") ||
		!strings.Contains(f.Msg, "alias *l") {
		t.Errorf("got %q, want the alias named with its path and line", f.Error())
	}
}

// A document larger than MaxSpecNodes once expanded, but within yaml.v3's
// alias ratio, is refused too: a wide alias used many times.
func TestAliasExpansionBoundedInSize(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal + "extra:\n  big: &big [")
	for i := range 2000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("x")
	}
	b.WriteString("]\n  uses: [")
	for i := range 100 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*big")
	}
	b.WriteString("]\n")
	fields := specErr(t, b.String())
	if len(fields) != 1 || !strings.Contains(fields[0].Msg, fmt.Sprintf("more than %d YAML nodes", MaxSpecNodes)) ||
		fields[0].Path != "extra.uses[48]" {
		t.Errorf("got %v, want the size limit named at the alias that crossed it", fields)
	}
}

// An alias that refers to a node containing it is refused rather than
// followed forever.
func TestAliasCycleRefused(t *testing.T) {
	for _, doc := range []string{"a: &a [1, *a]\n", "a: &a {b: *a}\n"} {
		n, err := countNodes(t, doc)
		if err == nil || !strings.Contains(err.Msg, "contains it") {
			t.Errorf("%q: %d nodes, err %v; want the cycle refused", doc, n, err)
		}
	}
}

// Ordinary anchors still work, and the count matches a hand count.
func TestAliasesWithinLimitsExpand(t *testing.T) {
	spec := strings.Replace(minimal, "  engine:\n    model: m\n", "  engine: &eng\n    model: m\n", 1) +
		"gate:\n  reference: none\n"
	if tr := mustParse(t, spec); tr[0].Topology.Engine.Model != "m" {
		t.Errorf("engine model %q", tr[0].Topology.Engine.Model)
	}
	// document, mapping, two keys, the list, its items, the alias and the
	// alias's list with two items (expanded).
	n, err := countNodes(t, "a: &x [1, 2]\nb: *x\n")
	if err != nil || n != 1+1+2+3+1+3 {
		t.Errorf("nodes = %d, %v; want 11", n, err)
	}
}

func TestSpecSizeBounded(t *testing.T) {
	spec := minimal + "extra: " + strings.Repeat("x", MaxSpecBytes) + "\n"
	fields := specErr(t, spec)
	if len(fields) != 1 || !strings.Contains(fields[0].Msg, fmt.Sprintf("at most %d", MaxSpecBytes)) {
		t.Errorf("got %v", fields)
	}
}

func countNodes(t *testing.T, doc string) (int, *FieldError) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatalf("parsing %q: %v", doc, err)
	}
	return expandedNodes(&n)
}
