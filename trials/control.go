package trials

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/target"
)

// ControlZeroReuse is the one control a spec's `control:` key names: each
// trial of a routing comparison also runs with its prefixes made unique
// (workload.unique_prefixes), so a policy's gain from prefix reuse is
// measured against the same trial with nothing to reuse.
const ControlZeroReuse = "zero_reuse"

// controlSetting names a control arm: "<trial>/…,control=zero_reuse".
var controlSetting = Setting{Path: "control", Value: ControlZeroReuse}

// parseControl reads the top-level `control:` key. A control needs a
// comparison (a matrix or variants): without one there is no routing
// choice whose gain it could bound.
func parseControl(n *yaml.Node, compared bool, p *problems) bool {
	n = deref(n)
	if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.Value != ControlZeroReuse {
		p.addAt("control", n.Line, "must be %s, got %q", ControlZeroReuse, n.Value)
		return false
	}
	if !compared {
		p.addAt("control", n.Line, "%s needs a comparison to control: a matrix or variants (e.g. matrix: {router.policy: [round_robin, cache_aware]})", ControlZeroReuse)
		return false
	}
	return true
}

// controlArm builds the zero-reuse arm of the trial t built from tree, or
// says why t cannot have one: it runs no router, or its workload shares no
// prefix to make unique.
func controlArm(tree *yaml.Node, t Trial, settings []Setting, line int, defaultName string, kinds []target.Kind) (Trial, []*FieldError) {
	w := t.Workload.Workload
	msg := ""
	switch {
	case !t.RouterLaunched():
		msg = fmt.Sprintf("%s compares routing, but trial %s runs no router (one replica, no P/D)", ControlZeroReuse, t.Name)
	case w.UniquePrefixes:
		msg = fmt.Sprintf("workload.unique_prefixes is already set in trial %s: it is its own zero-reuse control", t.Name)
	case w.Kind != workload.SharedPrefix && w.Kind != workload.Trace && (w.Kind != workload.Random || w.PrefixLen == 0):
		msg = fmt.Sprintf("workload kind %s of trial %s shares no prefix a control could make unique (%s takes shared_prefix, random with prefix_len > 0, or trace)",
			w.Kind, t.Name, ControlZeroReuse)
	}
	if msg != "" {
		return Trial{}, []*FieldError{{Path: "control", Line: line, Msg: msg}}
	}
	ctree := clone(tree)
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
	if err := setPath(ctree, []string{"workload", "unique_prefixes"}, v, line); err != nil {
		return Trial{}, []*FieldError{{Path: "control", Line: line, Msg: err.Error()}}
	}
	return buildTrial(ctree, append(append([]Setting{}, settings...), controlSetting), defaultName, kinds)
}
