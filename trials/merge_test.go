package trials

import (
	"strings"
	"testing"
)

// A merge key brings an anchored mapping's keys into another mapping, as
// yaml.v3 decodes it: keys written beside it win, earlier sources win over
// later ones, and a variant can start from the base engine.
func TestMergeKeysValidate(t *testing.T) {
	spec := `name: t
seed: 3
topology:
  replicas: 2
  engine: &eng
    model: m
    max_num_seqs: 8
    max_model_len: 4096
router: &rt
  policy: round_robin
workload:
  kind: random
  num_prompts: 10
gate:
  reference: none
variants:
  - name: base
  - name: big
    topology:
      engine: {<<: *eng, max_num_seqs: 16}
  - name: two
    topology:
      engine:
        <<: [{max_num_seqs: 32, max_model_len: 2048}, *eng]
    router: {<<: *rt}
`
	tr := mustParse(t, spec)
	if len(tr) != 3 {
		t.Fatalf("%d trials, want 3", len(tr))
	}
	for i, want := range []struct {
		seqs, modelLen int
	}{{8, 4096}, {16, 4096}, {32, 2048}} {
		e := tr[i].Topology.Engine
		if e.Model != "m" || e.MaxNumSeqs != want.seqs || e.MaxModelLen != want.modelLen {
			t.Errorf("%s: engine %+v, want model m, max_num_seqs %d, max_model_len %d", tr[i].Name, e, want.seqs, want.modelLen)
		}
	}
	if tr[2].Router.Policy != "round_robin" {
		t.Errorf("merged router policy %q", tr[2].Router.Policy)
	}
}

// A merged key is checked like a written one, and a merge of a scalar is an
// error at the merge key.
func TestMergeKeyErrorsNameTheKey(t *testing.T) {
	typo := strings.Replace(minimal, "  engine:\n    model: m\n", "  engine: {<<: {model: m, max_num_seq: 8}}\n", 1)
	if f := specErr(t, typo); len(f) != 1 || f[0].Path != "topology.engine.max_num_seq" {
		t.Errorf("typo in a merged mapping: %v, want topology.engine.max_num_seq", f)
	}
	scalar := strings.Replace(minimal, "  engine:\n    model: m\n", "  engine: {<<: m}\n", 1)
	if f := specErr(t, scalar); len(f) != 1 || f[0].Path != "topology.engine.<<" || !strings.Contains(f[0].Msg, "mapping") {
		t.Errorf("merge of a scalar: %v, want an error at topology.engine.<<", f)
	}
}
