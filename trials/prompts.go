package trials

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// GatePrompts is either a count of seeded, generated prompts or a list of
// prompt texts: `prompts: 8` or `prompts: ["…", "…"]`.
type GatePrompts struct {
	Count int
	List  []string
}

// N is the number of gate prompts.
func (p GatePrompts) N() int {
	if p.List != nil {
		return len(p.List)
	}
	return p.Count
}

// UnmarshalYAML accepts an integer or a sequence of strings. Errors are
// *yaml.TypeError so the decoder reports them with their line.
func (p *GatePrompts) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var c int
		if err := wholeNumber(n); err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: prompts %v", n.Line, err)}}
		}
		if err := n.Decode(&c); err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: prompts must be a count or a list of strings, got %q", n.Line, n.Value)}}
		}
		*p = GatePrompts{Count: c}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: prompts must be a list of strings", n.Line)}}
		}
		*p = GatePrompts{List: l}
		if l == nil {
			p.List = []string{}
		}
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: prompts must be a count or a list of strings", n.Line)}}
}

// MarshalJSON writes the same shape the YAML used.
func (p GatePrompts) MarshalJSON() ([]byte, error) {
	if p.List != nil {
		return json.Marshal(p.List)
	}
	return json.Marshal(p.Count)
}
