package trials

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target"
)

// maxTrials bounds a matrix expansion: a typo like a 100-value list crossed
// with three more lists should fail fast, not queue a day of trials.
const maxTrials = 1000

var matrixPathRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$`)

// axis is one matrix entry: a dotted path and the values it takes.
type axis struct {
	path   string
	keys   []string
	line   int
	values []*yaml.Node
	labels []string // how each value appears in trial names
}

// Setting is one value a matrix trial sets: Path as written in the matrix,
// Value as it appears in the trial name.
type Setting struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// parseMatrix reads the `matrix:` mapping in document order.
func parseMatrix(m *yaml.Node, p *problems) []axis {
	m = deref(m)
	if m == nil || m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.addAt("matrix", m.Line, "must be a mapping of dotted paths to lists of values")
		return nil
	}
	var axes []axis
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		path := "matrix." + k.Value
		switch {
		case !matrixPathRE.MatchString(k.Value):
			p.addAt(path, k.Line, "must be a dotted path of keys such as router.policy")
			continue
		case k.Value == "name" || k.Value == "matrix" || strings.HasPrefix(k.Value, "matrix.") || k.Value == "control":
			p.addAt(path, k.Line, "cannot be varied by the matrix")
			continue
		case v == nil || v.Kind != yaml.SequenceNode || len(v.Content) == 0:
			p.addAt(path, k.Line, "must be a non-empty list of values")
			continue
		}
		ax := axis{path: k.Value, keys: strings.Split(k.Value, "."), line: k.Line}
		seen := map[string]int{}
		for j, val := range v.Content {
			label := matrixLabel(val, j)
			if first, dup := seen[label]; dup {
				p.addAt(fmt.Sprintf("%s[%d]", path, j), val.Line, "repeats value %d (%s)", first, label)
				continue
			}
			seen[label] = j
			ax.values = append(ax.values, val)
			ax.labels = append(ax.labels, label)
		}
		axes = append(axes, ax)
	}
	for i, a := range axes {
		for _, b := range axes[i+1:] {
			if strings.HasPrefix(b.path+".", a.path+".") || strings.HasPrefix(a.path+".", b.path+".") {
				p.addAt("matrix."+b.path, b.line, "overlaps matrix.%s", a.path)
			}
		}
	}
	n := 1
	for _, a := range axes {
		n *= len(a.values)
		if n > maxTrials {
			p.addAt("matrix", m.Line, "expands to more than %d trials", maxTrials)
			return nil
		}
	}
	return axes
}

// matrixLabel is a value's form in a trial name: the scalar itself, or
// "#index" for a mapping or list value.
func matrixLabel(v *yaml.Node, i int) string {
	v = deref(v)
	if v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return fmt.Sprintf("#%d", i)
}

// combinations is the cartesian product of the axes in a stable order: the
// first axis varies slowest, values in the order written.
func combinations(axes []axis) [][]int {
	combos := [][]int{{}}
	for _, a := range axes {
		var next [][]int
		for _, c := range combos {
			for j := range a.values {
				next = append(next, append(append([]int(nil), c...), j))
			}
		}
		combos = next
	}
	return combos
}

// trialName appends the settings to the base name:
// "quickstart/router.policy=cache_aware,topology.replicas=4".
func trialName(base string, settings []Setting) string {
	if len(settings) == 0 {
		return base
	}
	parts := make([]string, len(settings))
	for i, s := range settings {
		parts[i] = s.Path + "=" + s.Value
	}
	return base + "/" + strings.Join(parts, ",")
}

// overriddenBase validates the base spec's values at the keys the matrix
// varies. Every trial replaces them, so without this a typo there
// (router.policy: round_robn) would never be read, and the spec would look
// right while saying something it does not mean. Only problems at those
// keys are kept: the rest of the base is validated in every trial.
func overriddenBase(base *yaml.Node, axes []axis, defaultName string, kinds []target.Kind) []*FieldError {
	var overridden []axis
	for _, ax := range axes {
		if n, _ := lookup(base, ax.path); n != nil {
			overridden = append(overridden, ax)
		}
	}
	if len(overridden) == 0 {
		return nil
	}
	_, errs := buildTrial(clone(base), nil, defaultName, kinds)
	var out []*FieldError
	for _, e := range errs {
		for _, ax := range overridden {
			if e.Path == ax.path || strings.HasPrefix(e.Path, ax.path+".") || strings.HasPrefix(e.Path, ax.path+"[") {
				e.Trial = ""
				e.Msg += fmt.Sprintf(" (the base value, which matrix.%s overrides in every trial)", ax.path)
				out = append(out, e)
				break
			}
		}
	}
	return out
}
