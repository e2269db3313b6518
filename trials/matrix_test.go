package trials

import (
	"strings"
	"testing"
)

func TestMatrixExpansion(t *testing.T) {
	spec := minimal + `matrix:
  router.policy: [round_robin, cache_aware]
  topology.replicas: [2, 4]
`
	tr := mustParse(t, spec)
	want := []string{
		"t/router.policy=round_robin,topology.replicas=2",
		"t/router.policy=round_robin,topology.replicas=4",
		"t/router.policy=cache_aware,topology.replicas=2",
		"t/router.policy=cache_aware,topology.replicas=4",
	}
	if len(tr) != len(want) {
		t.Fatalf("%d trials, want %d", len(tr), len(want))
	}
	hashes := map[string]bool{}
	for i, x := range tr {
		if x.Name != want[i] {
			t.Errorf("trial %d = %s, want %s", i, x.Name, want[i])
		}
		if x.Seed != 3 {
			t.Errorf("%s: seed %d, want the spec's 3", x.Name, x.Seed)
		}
		if x.SweepID == "" || x.SweepID != tr[0].SweepID {
			t.Errorf("%s: sweep id %q, want one shared id", x.Name, x.SweepID)
		}
		hashes[x.SpecHash] = true
	}
	if len(hashes) != 4 {
		t.Errorf("%d distinct hashes, want 4", len(hashes))
	}
	if tr[1].Router.Policy != "round_robin" || tr[1].Topology.Replicas != 4 || tr[2].Router.Policy != "cache_aware" {
		t.Errorf("values not applied: %+v / %+v", tr[1].Topology, tr[2].Router.Policy)
	}
	if got := tr[3].Settings; len(got) != 2 || got[0] != (Setting{"router.policy", "cache_aware"}) || got[1] != (Setting{"topology.replicas", "4"}) {
		t.Errorf("settings = %+v", got)
	}
	again := mustParse(t, spec)
	for i := range tr {
		if again[i].SpecHash != tr[i].SpecHash || again[i].SweepID != tr[i].SweepID {
			t.Error("expansion is not deterministic")
		}
	}
}

func TestMatrixCreatesSections(t *testing.T) {
	spec := strings.Replace(minimal, "router:\n  policy: round_robin\n", "", 1) + "matrix:\n  router.policy: [random]\n  warmup.requests: [0, 10]\n"
	tr := mustParse(t, spec)
	if len(tr) != 2 || tr[0].Router.Policy != "random" || tr[0].Warmup.Requests != 0 || tr[1].Warmup.Requests != 10 {
		t.Errorf("trials = %+v", tr)
	}
}

func TestMatrixMappingValues(t *testing.T) {
	spec := minimal + `matrix:
  workload:
    - {kind: random, num_prompts: 10}
    - {kind: shared_prefix, num_groups: 2}
`
	tr := mustParse(t, spec)
	if tr[0].Name != "t/workload=#0" || tr[1].Workload.Kind != "shared_prefix" {
		t.Errorf("got %s, %s", tr[0].Name, tr[1].Workload.Kind)
	}
}

func TestMatrixErrorsNameTheEntry(t *testing.T) {
	for _, tc := range []struct {
		name, matrix, path, msg, trial string
		line                           int
	}{
		{"bad value", "  router.policy: [round_robin, fastest]\n", "router.policy", "must be one of", "t/router.policy=fastest", 13},
		{"unknown path", "  router.polcy: [a, b]\n", "router.polcy", `unknown key; did you mean "policy"?`, "", 13},
		{"invalid combination", "  topology.replicas: [1, 2]\n  router.pd_disaggregation: [false, true]\n", "router.pd_disaggregation", "needs topology.prefill", "t/topology.replicas=2,router.pd_disaggregation=true", 14},
		{"empty list", "  router.policy: []\n", "matrix.router.policy", "non-empty list", "", 13},
		{"duplicate", "  router.policy: [random, random]\n", "matrix.router.policy[1]", "repeats value 0", "", 13},
		{"name", "  name: [a, b]\n", "matrix.name", "cannot be varied", "", 13},
		{"overlap", "  router: [{policy: random}]\n  router.policy: [random]\n", "matrix.router.policy", "overlaps matrix.router", "", 14},
		{"bad path", "  Router-Policy: [a]\n", "matrix.Router-Policy", "dotted path", "", 13},
		{"through a scalar", "  name.x: [a]\n", "matrix.name.x", "", "", 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := specErr(t, minimal+"matrix:\n"+tc.matrix)
			for _, f := range fields {
				if f.Path == tc.path && strings.Contains(f.Msg, tc.msg) {
					if f.Line != tc.line || f.Trial != tc.trial {
						t.Errorf("%s: line %d trial %q, want line %d trial %q", f, f.Line, f.Trial, tc.line, tc.trial)
					}
					return
				}
			}
			t.Errorf("no error %s: …%s…; got %v", tc.path, tc.msg, fields)
		})
	}
}

func TestMatrixTooLarge(t *testing.T) {
	var vals []string
	for i := range 40 {
		vals = append(vals, strings.Repeat("x", i+1))
	}
	list := "[" + strings.Join(vals, ", ") + "]"
	fields := specErr(t, minimal+"matrix:\n  baseline: "+list+"\n  tolerance: "+list+"\n")
	if len(fields) != 1 || !strings.Contains(fields[0].Msg, "more than 1000 trials") {
		t.Errorf("got %v", fields)
	}
}

// A base key the matrix overrides is still validated: every trial replaces
// it, but a typo there would otherwise pass silently.
func TestMatrixOverriddenBaseKeyIsValidated(t *testing.T) {
	spec := strings.Replace(minimal, "policy: round_robin", "policy: round_robn", 1) +
		"matrix:\n  router.policy: [round_robin, cache_aware]\n"
	f := specErr(t, spec)
	if len(f) != 1 || f[0].Path != "router.policy" || f[0].Line != 8 || !strings.Contains(f[0].Msg, "round_robn") ||
		!strings.Contains(f[0].Msg, "matrix.router.policy overrides") {
		t.Fatalf("got %v, want the base router.policy's typo at line 8", f)
	}
	// A valid base value, and a key the base does not set, add nothing.
	mustParse(t, minimal+"matrix:\n  router.policy: [round_robin, cache_aware]\n  seed: [1, 2]\n  router.cache_threshold: [0.3]\n")
}
