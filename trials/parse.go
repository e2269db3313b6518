package trials

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target"
)

// Trial is one expanded, defaulted and validated trial.
type Trial struct {
	Spec
	// SpecHash is the sha256 (hex) of the canonical JSON of Spec: equal
	// hashes ran the same trial definition.
	SpecHash string `json:"spec_hash"`
	// SweepID groups the trials of one matrix expansion ("" without a
	// matrix). It is derived from the trials' hashes, so the same sweep
	// definition always has the same id.
	SweepID string `json:"sweep_id,omitempty"`
	// Replicate is set on each run of a repeated trial (Trial.Replica).
	Replicate Replicate `json:"replicate,omitzero"`
	// Settings are the variant (path "variant") and matrix values that
	// made this trial, in that order.
	Settings []Setting `json:"settings,omitempty"`
	// SameAs names an earlier trial of the expansion that runs the same
	// thing after defaults; such a trial is not run again. SameBecause
	// says which of its settings had no effect.
	SameAs      string `json:"same_as,omitempty"`
	SameBecause string `json:"same_because,omitempty"`
	// Assertions are Spec.Assert parsed.
	Assertions []Assertion `json:"assertions,omitempty"`
	// ToleranceFraction is Spec.Tolerance parsed ("10%" → 0.1); 0 without a
	// baseline.
	ToleranceFraction float64 `json:"tolerance_fraction,omitempty"`
	// SpecDir is the spec file's directory (Load), against which relative
	// workload paths resolve; empty after Parse (the working directory).
	// The spec keeps paths as written, so the hash does not depend on it.
	SpecDir string `json:"-"`
	// Source is the spec the trial came from, so another autoinfer (the
	// kubernetes target's runner pod) can parse the same trial again.
	Source Source `json:"-"`
}

// Source is a spec document as parsed.
type Source struct {
	Data []byte
	// DefaultName names a spec without a name (its file's base name).
	DefaultName string
}

// Parse parses the source again, as Load or Parse did.
func (s Source) Parse(kinds []target.Kind) ([]Trial, error) {
	return parse(s.Data, s.DefaultName, kinds)
}

// Load reads a spec file and returns its trials. A spec without a name is
// named after the file ("quickstart.yaml" → "quickstart"). Relative
// workload paths resolve against the spec's directory, and the workload's
// files are read and checked against the engines' context limits
// (readWorkloads). Problems come back as one *SpecError naming the file.
// kinds are the target kinds a spec may name (adapter/targetkinds.All); the
// first is the default.
func Load(path string, kinds []target.Kind) ([]Trial, error) {
	data, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	trials, err := parse(data, stem, kinds)
	var se *SpecError
	if errors.As(err, &se) {
		se.File = path
	}
	if err != nil {
		return nil, err
	}
	if err := readWorkloads(trials, path, data); err != nil {
		return nil, err
	}
	return trials, nil
}

// Parse decodes a spec (unknown keys are errors), expands its matrix and
// returns the trials in a stable order, each defaulted and validated.
// Problems come back as one *SpecError listing every *FieldError. kinds are
// the target kinds a spec may name, as for Load.
func Parse(data []byte, kinds []target.Kind) ([]Trial, error) { return parse(data, "", kinds) }

func parse(data []byte, defaultName string, kinds []target.Kind) ([]Trial, error) {
	if len(data) > MaxSpecBytes {
		return nil, &SpecError{Fields: []*FieldError{{Msg: fmt.Sprintf("%d bytes; a spec may have at most %d", len(data), MaxSpecBytes)}}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &SpecError{Fields: []*FieldError{syntaxError(err)}}
	}
	nodes, ferr := expandedNodes(&doc)
	if ferr != nil {
		return nil, &SpecError{Fields: []*FieldError{ferr}}
	}
	if ferr := resolveMerges(&doc, "", map[*yaml.Node]bool{}); ferr != nil {
		return nil, &SpecError{Fields: []*FieldError{ferr}}
	}
	root := deref(&doc)
	if root == nil {
		return nil, &SpecError{Fields: []*FieldError{{Msg: "empty spec"}}}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &SpecError{Fields: []*FieldError{{Line: root.Line, Msg: "a spec is a mapping of keys such as name, target, topology, router, workload"}}}
	}
	// Every stage reports at once: a bad matrix axis or variant is left
	// out and the rest of the spec is still expanded and validated.
	p := &problems{}
	_, matrix := child(root, "matrix")
	axes := parseMatrix(matrix, p)
	_, vnode := child(root, "variants")
	variants := parseVariants(vnode, axes, p)
	_, cnode := child(root, "control")
	control := parseControl(cnode, matrix != nil || vnode != nil, p)
	base := clone(root)
	base.Content = nil
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "matrix" && k != "variants" && k != "control" {
			base.Content = append(base.Content, clone(root.Content[i]), clone(root.Content[i+1]))
		}
	}

	runs := variants
	if len(runs) == 0 {
		runs = []variant{{}} // the base spec as it is
	}
	if n := trialCount(axes) * len(runs); n > 1 && n*nodes > maxMatrixNodes {
		at, line := "matrix", 0
		if matrix != nil {
			line = matrix.Line
		} else if vnode != nil {
			at, line = "variants", vnode.Line
		}
		return nil, &SpecError{Fields: []*FieldError{{Path: at, Line: line, Msg: fmt.Sprintf(
			"expands to %d trials of %d YAML nodes each; at most %d nodes in all", n, nodes, maxMatrixNodes)}}}
	}
	combos := combinations(axes)
	var trials, controls []Trial
	fields := p.fields
	for _, v := range runs {
		for _, combo := range combos {
			tree := clone(base)
			var settings []Setting
			if v.name != "" {
				settings = append(settings, Setting{Path: "variant", Value: v.name})
				if err := v.apply(tree); err != nil {
					fields = append(fields, &FieldError{Path: fmt.Sprintf("variants[%d]", v.index), Line: v.line, Msg: err.Error()})
				}
			}
			for i, ax := range axes {
				settings = append(settings, Setting{Path: ax.path, Value: ax.labels[combo[i]]})
				if err := setPath(tree, ax.keys, clone(ax.values[combo[i]]), ax.line); err != nil {
					fields = append(fields, &FieldError{Path: "matrix." + ax.path, Line: ax.line, Msg: err.Error()})
				}
			}
			t, errs := buildTrial(tree, settings, defaultName, kinds)
			for _, e := range errs {
				e.Trial, e.Path = t.Name, v.rename(e.Path)
			}
			fields = append(fields, errs...)
			trials = append(trials, t)
			if control && len(errs) == 0 {
				c, cerrs := controlArm(tree, t, settings, cnode.Line, defaultName, kinds)
				fields = append(fields, cerrs...)
				controls = append(controls, c)
			}
		}
	}
	// The control arms follow the arms they control, in the same sweep.
	trials = append(trials, controls...)
	fields = append(fields, overriddenBase(base, axes, defaultName, kinds)...)
	if len(fields) > 0 {
		return nil, &SpecError{Fields: sortFields(fields, len(trials))}
	}
	markSame(trials)
	for i := range trials {
		trials[i].Source = Source{Data: data, DefaultName: defaultName}
	}
	if len(axes) > 0 || len(variants) > 0 {
		id := sweepID(trials)
		for i := range trials {
			trials[i].SweepID = id
		}
	}
	return trials, nil
}

// buildTrial decodes, defaults and validates one expanded spec tree.
func buildTrial(tree *yaml.Node, settings []Setting, defaultName string, kinds []target.Kind) (Trial, []*FieldError) {
	p := &problems{lines: func(path string) int { return lineOf(tree, path) }}
	present := func(path string) bool { n, _ := lookup(tree, path); return n != nil }

	spec := initialSpec()
	checkKeys(tree, reflect.TypeFor[Spec](), "", p)
	if err := tree.Decode(&spec); err != nil {
		decodeErrors(tree, err, p)
	}
	v := &problems{lines: p.lines} // validation problems found while decoding
	decodeTarget(tree, &spec.Target, kinds, p, v)
	base := spec.Name
	if base == "" {
		base = defaultName
	}
	spec.Name = trialName(base, settings)
	t := Trial{Settings: settings}
	// Validation runs even when decoding found problems, so one pass
	// reports all of them; only a check of a value that failed to decode
	// would repeat (or misreport) that failure, and is left out.
	undecoded := make([]string, len(p.fields))
	for i, f := range p.fields {
		undecoded[i] = f.Path
	}
	applyDefaults(&spec, present)
	validate(&spec, base, present, v)
	for _, f := range v.fields {
		if !slices.ContainsFunc(undecoded, func(u string) bool { return u == "" || within(f.Path, u) }) {
			p.fields = append(p.fields, f)
		}
	}
	normaliseRepeats(&spec)
	normaliseClock(&spec)
	if !spec.RouterLaunched() {
		// No router runs, so its settings cannot affect the trial: the
		// ledger stores an empty router config and the hash ignores them.
		spec.Router = Router{}
	}
	t.Spec = spec
	if len(p.fields) > 0 {
		return t, p.fields
	}
	// The hash covers what runs: the workload's defaults spelled out.
	spec.Workload.Workload = spec.Workload.WithDefaults()
	t.Spec = spec
	for _, a := range spec.Assert {
		parsed, _ := ParseAssertion(a) // validated above
		t.Assertions = append(t.Assertions, parsed)
	}
	if spec.Baseline != "" {
		t.ToleranceFraction, _ = ParseTolerance(spec.Tolerance) // validated above
	}
	hash, err := spec.Hash()
	if err != nil {
		p.add("", "%v", err)
		return t, p.fields
	}
	t.SpecHash = hash
	return t, nil
}

// within reports whether path is base or lies under it (base.x, base[0]).
func within(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+".") || strings.HasPrefix(path, base+"[")
}

// Hash is the sha256 (hex) of s's canonical JSON (struct fields in a fixed
// order, map keys sorted by encoding/json).
func (s Spec) Hash() (string, error) {
	if !s.Virtual() {
		s.HTTPOverheadMs, s.HTTPInboundMs, s.EngineLagMs, s.EngineWakeMs = 0, 0, 0, 0 // a real-time trial does not use them
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("hashing spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

var lineMsgRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// decodeErrors turns the decoder's "line N: cannot unmarshal …" messages
// into field errors with paths.
func decodeErrors(tree *yaml.Node, err error, p *problems) {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		p.add("", "%v", err)
		return
	}
	for _, msg := range te.Errors {
		m := lineMsgRE.FindStringSubmatch(msg)
		if m == nil {
			p.add("", "%s", msg)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		p.addAt(pathAtLine(tree, line), line, "%s", friendlyType(m[2]))
	}
}

// friendlyType rewrites YAML tags in decoder messages: "cannot unmarshal
// !!str `two` into int" → "cannot use string `two` as int".
func friendlyType(msg string) string {
	r := strings.NewReplacer("cannot unmarshal ", "cannot use ", "!!str", "string", "!!int", "integer",
		"!!float", "number", "!!bool", "boolean", "!!map", "mapping", "!!seq", "list", " into ", " as ",
		"time.Duration", "duration (e.g. 30s)")
	return r.Replace(msg)
}

var syntaxLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError names the line of a YAML syntax error.
func syntaxError(err error) *FieldError {
	if m := syntaxLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FieldError{Line: line, Msg: "YAML syntax: " + m[2]}
	}
	return &FieldError{Msg: strings.Replace(err.Error(), "yaml: ", "YAML syntax: ", 1)}
}
