package stepmodel

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// minKVTokens is the KV capacity a shipped profile must leave after the
// weights: two 8k-token sequences.
const minKVTokens = 16384

// Entry is one named calibrated profile.
type Entry struct {
	Name  string
	Key   PairKey
	Model *Model
}

// ProfileName is "<gpu>-<model>" with "-tp<N>" for N > 1.
func ProfileName(gpu, model string, tp int) string {
	name := gpu + "-" + model
	if tp > 1 {
		name += "-tp" + strconv.Itoa(tp)
	}
	return name
}

// Catalogue lists the calibrated profiles, sorted by name: every measured
// (GPU, model, TP) whose weights leave room for minKVTokens of KV at vLLM's
// defaults, and the same (model, TP) on each GPU without measurements that
// borrows a measured GPU's efficiencies (derived from the architecture).
func Catalogue() []Entry {
	var out []Entry
	add := func(g GPU, model string, tp int) {
		a, ok := archs[model]
		if !ok {
			return
		}
		m, err := NewModel(a, g, tp)
		if err != nil || !m.fits() {
			return
		}
		out = append(out, Entry{Name: ProfileName(g.Name, model, tp), Key: PairKey{g.Name, model, tp}, Model: m})
	}
	keys := slices.SortedFunc(maps.Keys(linearTables), comparePairs)
	for _, k := range keys {
		g, err := LookupGPU(k.GPU)
		if err == nil {
			add(g, k.Model, k.TP)
		}
	}
	for _, g := range gpus {
		if g.Like == "" {
			continue
		}
		for _, k := range keys {
			if k.GPU == g.Like && (k.TP == 1 || g.Network != "") {
				add(g, k.Model, k.TP)
			}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// fits reports whether m leaves minKVTokens of KV at vLLM's defaults.
func (m *Model) fits() bool { return Fits(m.Arch, m.GPU, m.TP) }

// Fits reports whether arch in bf16 on tp GPUs g leaves minKVTokens of KV at
// vLLM's defaults.
func Fits(a Arch, g GPU, tp int) bool {
	m := &Model{Arch: a, GPU: g, TP: tp, Prec: BF16, ExpertPrec: BF16, KVElemBytes: 2, EP: 1, refLen: defaultRefLen, shape: shapeOf(a, tp)}
	seqs, batched := g.BatchDefaults()
	return m.KVBlocks(0.9, 16, batched, seqs)*16 >= minKVTokens
}

// Lookup finds a calibrated profile by name.
func Lookup(name string) (*Model, error) {
	for _, e := range Catalogue() {
		if e.Name == name {
			return e.Model, nil
		}
	}
	return nil, fmt.Errorf("no calibrated profile %q", name)
}

// BuiltinArch is the shape of a model vidur measured (llama3-8b, qwen-72b,
// …).
func BuiltinArch(name string) (Arch, bool) {
	a, ok := archs[name]
	return a, ok
}

// LinearError and DerivedError are the golden figures of a measured pair
// (see the generated tables).
func LinearError(k PairKey) (float64, bool) {
	e, ok := linearErrors[k]
	return e, ok
}

// DerivedError is the held-out error of the architecture-derived linear
// layers for a measured pair.
func DerivedError(k PairKey) (float64, bool) {
	e, ok := derivedErrors[k]
	return e, ok
}

// Accuracy is what the golden tests measured for a profile's model, in
// words: the linear table's held-out error, or for a derived model the
// held-out error of the derivation on the same model measured on the GPU it
// borrows efficiencies from; a GPU derived from its datasheet adds its
// stated error band, and a mixture of experts, MLA or window layers say
// where their figures were checked.
func (m *Model) Accuracy() string {
	acc := "derived from the architecture; not checked against measurements"
	k := PairKey{m.GPU.Name, m.Arch.Name, m.TP}
	if e, ok := linearErrors[k]; ok && m.Measured {
		acc = fmt.Sprintf("linear %.1f%% on held-out rows; attention ≤10%% on A100 rows", 100*e)
	} else if e, ok := derivedErrors[PairKey{m.GPU.efficiencyGPU(), m.Arch.Name, m.TP}]; ok && archs[m.Arch.Name] == m.Arch {
		acc = fmt.Sprintf("derived linear %.1f%% on %s's held-out rows; attention ≤10%% on A100 rows", 100*e, m.GPU.efficiencyGPU())
	}
	if m.Arch.IsMoE() || m.Arch.IsMLA() || m.Arch.WindowLayers > 0 {
		acc += "; MoE/MLA/window parts checked only against published vLLM rows (docs/sim.md)"
	}
	if b := m.GPU.ErrorBand; b > 0 {
		acc += fmt.Sprintf("; GPU derived from its datasheet, stated band ±%.0f%%", 100*b)
	}
	return acc
}
