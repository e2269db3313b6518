package search

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/kubernetes"
	"github.com/autoinfer/autoinfer/trials"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Spec is a `search:` block.
type Spec struct {
	Constraints Constraints `yaml:"constraints"`
	Objective   Objective   `yaml:"objective"`
	// Top is how many feasible candidates the table shows (default 10).
	Top int `yaml:"top"`
	// Strategy is how candidates are evaluated: "grid" (default: every
	// one on the whole traffic) or "halving" (successive halving on
	// shortened traffic, see Halving).
	Strategy string `yaml:"strategy"`
	// Halving configures the halving strategy.
	Halving Halving `yaml:"halving"`
	// Kubernetes says how search --kubernetes spreads the candidates over
	// a cluster (an Indexed Job per round); nil without the block.
	Kubernetes *kubernetes.SearchOptions `yaml:"kubernetes"`
}

// Strategies.
const (
	StrategyGrid    = "grid"
	StrategyHalving = "halving"
)

// Halving is successive halving: every candidate runs on the first
// MinFraction of the traffic; the best 1/Eta of them run again on Eta
// times as much, and so on; the last round runs the survivors on the whole
// traffic, and only those rows are ranked.
type Halving struct {
	// Eta is the factor by which each round cuts the candidates and grows
	// the traffic (default 3).
	Eta int `yaml:"eta"`
	// MinFraction is the first round's share of the traffic (default
	// 1/Eta²).
	MinFraction float64 `yaml:"min_fraction"`
}

// DefaultEta is halving's default eta.
const DefaultEta = 3

// Constraints restrict the candidates.
type Constraints struct {
	// GPUs is the GPU budget: a candidate runs only when its deployment
	// uses exactly this many GPUs (workers × tensor × data parallel), so
	// prefill/decode and collocated candidates compete at equal count. 0:
	// no budget.
	GPUs int `yaml:"gpus"`
	// SLO are bounds a feasible candidate's row meets, e.g.
	// "p99_ttft_ms <= 500".
	SLO []string `yaml:"slo"`
	slo []trials.Assertion
}

// Objective is what the search optimises: exactly one of Maximize,
// Minimize (a metric) or Pareto (two). A metric is a ledger metric, or one
// with the suffix _per_gpu (divided by the candidate's GPU count).
type Objective struct {
	Maximize string   `yaml:"maximize"`
	Minimize string   `yaml:"minimize"`
	Pareto   []string `yaml:"pareto"`
}

// metrics are the objective's metric names.
func (o Objective) metrics() []string {
	if len(o.Pareto) > 0 {
		return o.Pareto
	}
	return []string{cmp.Or(o.Maximize, o.Minimize)}
}

// DefaultTop is the default number of candidates shown.
const DefaultTop = 10

// HasBlock reports whether the spec data has a top-level `search:` block
// (data that is not a YAML mapping has none).
func HasBlock(data []byte) bool {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return false
	}
	return find(doc.Content[0], "search") != nil
}

// Split reads a spec with a `search:` block: it returns the spec without
// the block, its space and variants turned into the spec's matrix and
// variants, and the block itself, validated. name names a spec without one.
func Split(data []byte, name string) ([]byte, Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Spec{}, fmt.Errorf("spec: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, Spec{}, errors.New("spec: want a mapping")
	}
	top := doc.Content[0]
	blk := take(top, "search")
	if blk == nil {
		return nil, Spec{}, errors.New("search: the spec has no search block (see docs/whatif.md)")
	}
	if blk.Kind != yaml.MappingNode {
		return nil, Spec{}, fmt.Errorf("search: want a mapping (line %d)", blk.Line)
	}
	space, variants := take(blk, "space"), take(blk, "variants")
	var s Spec
	var errs []error
	if err := decodeStrict(blk, &s); err != nil {
		errs = append(errs, fmt.Errorf("search: %w", err))
	}
	if space != nil {
		if find(top, "matrix") != nil {
			errs = append(errs, field.Errorf("search.space", "the spec also has a matrix; put the space in one place (line %d)", space.Line))
		} else if m, err := matrixOf(space); err != nil {
			errs = append(errs, err)
		} else {
			put(top, "matrix", m)
		}
	}
	if variants != nil {
		if find(top, "variants") != nil {
			errs = append(errs, field.Errorf("search.variants", "the spec also has variants; put them in one place (line %d)", variants.Line))
		} else {
			put(top, "variants", variants)
		}
	}
	if find(top, "name") == nil {
		put(top, "name", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name})
	}
	errs = append(errs, s.Validate())
	if err := errors.Join(errs...); err != nil {
		return nil, Spec{}, err
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, Spec{}, fmt.Errorf("spec: %w", err)
	}
	return out, s, nil
}

// Validate checks every field and returns all problems joined, each a
// *field.Error naming the field by its path in the spec (search.…).
func (s *Spec) Validate() error {
	var l field.Errors
	if s.Top < 0 {
		l.Add("search.top", "must be >= 0, got %d", s.Top)
	}
	if s.Top == 0 {
		s.Top = DefaultTop
	}
	switch s.Strategy {
	case "", StrategyGrid:
		if s.Halving != (Halving{}) {
			l.Add("search.halving", "set with strategy %s; it configures strategy: halving", cmp.Or(s.Strategy, StrategyGrid))
		}
	case StrategyHalving:
		h := &s.Halving
		if h.Eta == 0 {
			h.Eta = DefaultEta
		}
		if h.Eta < 2 {
			l.Add("search.halving.eta", "must be >= 2, got %d", h.Eta)
		} else if h.MinFraction == 0 {
			h.MinFraction = 1 / float64(h.Eta*h.Eta)
		}
		if !(h.MinFraction > 0 && h.MinFraction < 1) {
			l.Add("search.halving.min_fraction", "must be in (0, 1), got %v", h.MinFraction)
		}
	default:
		l.Add("search.strategy", "must be %s or %s, got %q", StrategyGrid, StrategyHalving, s.Strategy)
	}
	if s.Kubernetes != nil {
		l.Check(s.Kubernetes.Validate("search.kubernetes"))
	}
	if s.Constraints.GPUs < 0 {
		l.Add("search.constraints.gpus", "must be >= 0, got %d", s.Constraints.GPUs)
	}
	s.Constraints.slo = nil
	for i, b := range s.Constraints.SLO {
		a, err := trials.ParseAssertion(b)
		if err != nil {
			l.Add(fmt.Sprintf("search.constraints.slo[%d]", i), "%v", err)
			continue
		}
		s.Constraints.slo = append(s.Constraints.slo, a)
	}
	o := s.Objective
	set := 0
	for _, m := range []string{o.Maximize, o.Minimize} {
		if m != "" {
			set++
		}
	}
	if len(o.Pareto) > 0 {
		set++
	}
	if set != 1 {
		l.Add("search.objective", "set exactly one of maximize, minimize or pareto (two metrics)")
	}
	check := func(key, name string) {
		if _, err := lookup(name); err != nil {
			l.Add("search.objective."+key, "%v", err)
		}
	}
	if o.Maximize != "" {
		check("maximize", o.Maximize)
	}
	if o.Minimize != "" {
		check("minimize", o.Minimize)
	}
	if len(o.Pareto) > 0 {
		if len(o.Pareto) != 2 {
			l.Add("search.objective.pareto", "want two metrics, got %d", len(o.Pareto))
		}
		for i, m := range o.Pareto {
			check(fmt.Sprintf("pareto[%d]", i), m)
		}
	}
	return l.Err()
}

// lookup is a ledger metric, or one with the suffix _per_gpu (its
// direction the base metric's).
func lookup(name string) (ledger.Metric, error) {
	base, perGPU := strings.CutSuffix(name, "_per_gpu")
	m, err := ledger.LookupMetric(base)
	if err != nil {
		return ledger.Metric{}, err
	}
	if perGPU {
		m.Name, m.Unit = name, m.Unit+"/GPU"
	}
	return m, nil
}

// matrixOf turns search.space into a matrix: lists stay, ranges
// {from, to, step} become the list from..to by step.
func matrixOf(space *yaml.Node) (*yaml.Node, error) {
	if space.Kind != yaml.MappingNode || len(space.Content) == 0 {
		return nil, fmt.Errorf("search.space: want a non-empty mapping of spec keys to lists or ranges (line %d)", space.Line)
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var errs []error
	for i := 0; i < len(space.Content); i += 2 {
		k, v := space.Content[i], space.Content[i+1]
		if v.Kind == yaml.MappingNode {
			list, err := rangeList(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("search.space.%s: %w (line %d)", k.Value, err, v.Line))
				continue
			}
			v = list
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			errs = append(errs, fmt.Errorf("search.space.%s: want a non-empty list or a range {from, to, step} (line %d)", k.Value, v.Line))
			continue
		}
		m.Content = append(m.Content, k, v)
	}
	return m, errors.Join(errs...)
}

// maxRange bounds one range's values.
const maxRange = 1000

func rangeList(v *yaml.Node) (*yaml.Node, error) {
	var r struct {
		From *float64 `yaml:"from"`
		To   *float64 `yaml:"to"`
		Step *float64 `yaml:"step"`
	}
	if err := decodeStrict(v, &r); err != nil {
		return nil, err
	}
	if r.From == nil || r.To == nil || r.Step == nil {
		return nil, errors.New("a range needs from, to and step")
	}
	from, to, step := *r.From, *r.To, *r.Step
	if !(step > 0) || to < from {
		return nil, fmt.Errorf("want step > 0 and to >= from, got from %v to %v step %v", from, to, step)
	}
	count := int(math.Floor((to-from)/step+1e-9)) + 1
	if count > maxRange {
		return nil, fmt.Errorf("%d values; a range may have at most %d", count, maxRange)
	}
	integral := from == math.Trunc(from) && step == math.Trunc(step)
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i := range count {
		x := from + float64(i)*step
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'g', -1, 64)}
		if integral {
			n.Tag, n.Value = "!!int", strconv.FormatInt(int64(x), 10)
		}
		list.Content = append(list.Content, n)
	}
	return list, nil
}

// decodeStrict decodes n into v, refusing unknown keys.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty mapping
		return err
	}
	return nil
}

// find is the value of key in mapping m, nil when absent.
func find(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// take removes key from mapping m and returns its value (nil: absent).
func take(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return v
		}
	}
	return nil
}

func put(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}
