package trials

import (
	"strings"
	"testing"
)

// pdBase is a four-engine spec whose variants put the same engines in
// three deployments.
const pdBase = `name: pd
seed: 3
topology:
  replicas: 4
  engine: {model: m}
router:
  policy: round_robin
workload: {kind: random, num_prompts: 10}
variants:
  - name: collocated4
  - name: 1p3d
    topology: {prefill: 1, decode: 3}
    router: {pd_disaggregation: true, prefill_policy: round_robin, decode_policy: least_loaded, kv_connector: nixl}
  - name: 2p2d
    topology.prefill: 2
    topology.decode: 2
    router: {pd_disaggregation: true, prefill_policy: round_robin, decode_policy: least_loaded, kv_connector: nixl}
`

func TestVariantsAreOneSweepOnOneStream(t *testing.T) {
	tr := mustParse(t, pdBase)
	want := []struct {
		name              string
		replicas, p, d, n int
	}{
		{"pd/variant=collocated4", 4, 0, 0, 4},
		{"pd/variant=1p3d", 0, 1, 3, 4},
		{"pd/variant=2p2d", 0, 2, 2, 4},
	}
	if len(tr) != len(want) {
		t.Fatalf("%d trials, want %d", len(tr), len(want))
	}
	for i, w := range want {
		x := tr[i]
		topo := x.Topology
		if x.Name != w.name || topo.Replicas != w.replicas || topo.Prefill != w.p || topo.Decode != w.d {
			t.Errorf("trial %d = %s %+v, want %s replicas %d prefill %d decode %d", i, x.Name, topo, w.name, w.replicas, w.p, w.d)
		}
		if x.SweepID == "" || x.SweepID != tr[0].SweepID || x.Seed != 3 || x.Workload.NumPrompts != 10 {
			t.Errorf("%s: sweep %q seed %d: want one sweep, the base's seed and workload", x.Name, x.SweepID, x.Seed)
		}
		if x.SameAs != "" {
			t.Errorf("%s: same as %s, want every variant to run", x.Name, x.SameAs)
		}
	}
	if !tr[1].Router.PDDisaggregation || tr[1].Router.DecodePolicy != "least_loaded" || tr[0].Router.PDDisaggregation {
		t.Errorf("router overrides not per variant: %+v / %+v", tr[0].Router.Config, tr[1].Router.Config)
	}
}

// Variants cross the matrix, variant first; a PD variant ignores
// router.policy, so its second policy is the same trial and runs once.
func TestVariantsCrossTheMatrixAndRepeatsRunOnce(t *testing.T) {
	tr := mustParse(t, pdBase+"matrix:\n  router.policy: [round_robin, least_loaded]\n")
	if len(tr) != 6 {
		t.Fatalf("%d trials, want 3 variants × 2 policies", len(tr))
	}
	same := map[string]string{}
	for _, x := range tr {
		if x.SameAs != "" {
			same[x.Name] = x.SameAs + ": " + x.SameBecause
		}
	}
	want := map[string]string{
		"pd/variant=1p3d,router.policy=least_loaded": "pd/variant=1p3d,router.policy=round_robin: router.policy=least_loaded has no effect: PD routes by prefill_policy and decode_policy",
		"pd/variant=2p2d,router.policy=least_loaded": "pd/variant=2p2d,router.policy=round_robin: router.policy=least_loaded has no effect: PD routes by prefill_policy and decode_policy",
	}
	if len(same) != len(want) {
		t.Errorf("repeats = %v, want %v", same, want)
	}
	for k, v := range want {
		if same[k] != v {
			t.Errorf("%s: same as %q, want %q", k, same[k], v)
		}
	}
}

// Issue 11: "a policy sweep crossed with replicas: [1, 2, 3] runs six
// identical single-replica trials"; the single-replica ones run no router,
// so all but one are repeats.
func TestPolicyTimesReplicasRunsOneSingleReplicaTrial(t *testing.T) {
	tr := mustParse(t, minimal+"matrix:\n  router.policy: [round_robin, least_loaded, cache_aware]\n  topology.replicas: [1, 2, 3]\n")
	var run, repeats []string
	for _, x := range tr {
		if x.SameAs == "" {
			run = append(run, x.Name)
			continue
		}
		repeats = append(repeats, x.Name)
		if x.SameAs != "t/router.policy=round_robin,topology.replicas=1" || !strings.Contains(x.SameBecause, "runs no router") {
			t.Errorf("%s: same as %s (%s)", x.Name, x.SameAs, x.SameBecause)
		}
	}
	if len(run) != 7 || len(repeats) != 2 {
		t.Errorf("run %v, repeats %v; want 7 and the two other single-replica policies", run, repeats)
	}
}

// Problems inside a variant name the variant and the key as written
// there; router.prefill and router.decode, which no spec can write, are
// never named.
func TestVariantErrorsNameTheVariantKey(t *testing.T) {
	spec := strings.Replace(pdBase, "topology.decode: 2", "topology.decode: 0", 1)
	spec = strings.Replace(spec, "{prefill: 1, decode: 3}\n    router: {pd_disaggregation: true,", "{prefill: 1, decode: 3}\n    router: {", 1)
	fields := specErr(t, spec)
	got := map[string]*FieldError{}
	for _, f := range fields {
		got[f.Trial+" "+f.Path] = f
		if within(f.Path, "router.prefill") || within(f.Path, "router.decode") || within(f.Path, "router.worker_urls") {
			t.Errorf("problem names a key the user cannot write: %v", f)
		}
	}
	for key, msg := range map[string]string{
		"pd/variant=2p2d variants[2].topology.decode":     "must be ≥ 1 when prefill is set",
		"pd/variant=1p3d router.pd_disaggregation":        "must be true when topology sets prefill and decode",
		"pd/variant=1p3d variants[1].router.kv_connector": "only allowed when pd_disaggregation is true",
	} {
		f := got[key]
		if f == nil || !strings.Contains(f.Msg, msg) {
			t.Errorf("%s: got %v, want %q; all: %v", key, f, msg, fields)
		}
	}
	if f := got["pd/variant=2p2d variants[2].topology.decode"]; f != nil && f.Line != 16 {
		t.Errorf("line %d, want 16 (the variant's key)", f.Line)
	}
}

func TestVariantListErrors(t *testing.T) {
	base := strings.SplitAfter(pdBase, "variants:\n")[0]
	for _, c := range []struct{ name, variants, path, msg string }{
		{"not a list", "  a: 1\n", "variants", "must be a non-empty list"},
		{"no name", "  - topology: {replicas: 2}\n", "variants[0].name", "required"},
		{"bad name", "  - name: a/b\n", "variants[0].name", "must be letters"},
		{"repeated name", "  - name: a\n  - name: a\n", "variants[1].name", "repeats variants[0]'s name"},
		{"matrix inside", "  - name: a\n    matrix: {router.policy: [x]}\n", "variants[0].matrix", "cannot be set by a variant"},
		{"unknown key", "  - name: a\n    topology: {replica: 2}\n", "variants[0].topology.replica", "unknown key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fields := specErr(t, base+c.variants)
			for _, f := range fields {
				if f.Path == c.path && strings.Contains(f.Msg, c.msg) {
					return
				}
			}
			t.Errorf("problems %v, want %s: %s", fields, c.path, c.msg)
		})
	}
	fields := specErr(t, pdBase+"matrix:\n  topology.prefill: [1, 2]\n")
	found := false
	for _, f := range fields {
		found = found || f.Path == "variants[2].topology.prefill" && strings.Contains(f.Msg, "also varied by matrix.topology.prefill")
	}
	if !found {
		t.Errorf("overlap with the matrix not reported: %v", fields)
	}
}

// trial validate reports every problem of every stage at once: matrix and
// variant entries, unknown keys and type errors, and validation of the
// rest (each stage used to stop the ones after it).
func TestEveryStageReportsAtOnce(t *testing.T) {
	fields := specErr(t, `name: s
topology: {replicas: 2, typo: 1, engine: {model: m}}
router: {policy: fastest}
workload: {kind: random, num_prompts: -3, input_len: two}
variants:
  - topology: {replicas: 3}
matrix:
  router.policy: []
`)
	want := map[string]string{
		"topology.typo":        "unknown key",
		"router.policy":        "must be one of",
		"workload.num_prompts": "must be ≥ 0",
		"workload.input_len":   "cannot use string",
		"variants[0].name":     "required",
		"matrix.router.policy": "must be a non-empty list",
	}
	for _, f := range fields {
		if msg, ok := want[f.Path]; ok && strings.Contains(f.Msg, msg) {
			delete(want, f.Path)
		}
	}
	if len(want) > 0 {
		t.Errorf("not reported: %v\ngot: %v", want, fields)
	}
}

// Issue 11: a topology that does not fit pd_disaggregation was reported
// under router.prefill and router.decode, keys no spec can write. It is
// now one problem at the key to change.
func TestPDMismatchNamesWritableKeys(t *testing.T) {
	for _, c := range []struct{ name, spec, msg string }{
		{"prefill and decode without pd", "name: p\ntopology: {prefill: 1, decode: 3, engine: {model: m}}\nworkload: {kind: random, num_prompts: 5}\n",
			"must be true when topology sets prefill and decode"},
		{"pd with replicas", "name: p\ntopology: {replicas: 4, engine: {model: m}}\nrouter: {pd_disaggregation: true, prefill_policy: round_robin, decode_policy: round_robin, kv_connector: nixl}\nworkload: {kind: random, num_prompts: 5}\n",
			"needs topology.prefill and topology.decode instead of topology.replicas"},
	} {
		fields := specErr(t, c.spec)
		if len(fields) != 1 || fields[0].Path != "router.pd_disaggregation" || !strings.Contains(fields[0].Msg, c.msg) {
			t.Errorf("%s: problems %v, want only router.pd_disaggregation: %s", c.name, fields, c.msg)
		}
	}
}
