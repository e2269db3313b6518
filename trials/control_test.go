package trials

import (
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
)

const controlled = `name: t
seed: 3
topology:
  replicas: 2
  engine:
    model: m
workload:
  kind: shared_prefix
  num_groups: 2
  prompts_per_group: 4
  num_prompts: 8
matrix:
  router.policy: [round_robin, cache_aware]
control: zero_reuse
`

// TestControlAddsZeroReuseArms: each compared trial gets a control arm in
// the same sweep, the same but for unique prefixes.
func TestControlAddsZeroReuseArms(t *testing.T) {
	ts, err := Parse([]byte(controlled), targetkinds.All())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tr := range ts {
		names = append(names, tr.Name)
	}
	want := []string{"t/router.policy=round_robin", "t/router.policy=cache_aware",
		"t/router.policy=round_robin,control=zero_reuse", "t/router.policy=cache_aware,control=zero_reuse"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("trials %v, want %v", names, want)
	}
	for i := range 2 {
		arm, ctl := ts[i], ts[i+2]
		if arm.SweepID == "" || ctl.SweepID != arm.SweepID {
			t.Errorf("sweep ids %q and %q, want one sweep", arm.SweepID, ctl.SweepID)
		}
		if arm.Workload.UniquePrefixes || !ctl.Workload.UniquePrefixes {
			t.Errorf("unique_prefixes: arm %v, control %v", arm.Workload.UniquePrefixes, ctl.Workload.UniquePrefixes)
		}
		if arm.StreamID() != ctl.StreamID() || arm.Seed != ctl.Seed || arm.Workload.NumPrompts != ctl.Workload.NumPrompts || ctl.Router.Policy != arm.Router.Policy {
			t.Errorf("control %s differs from its arm beyond its prefixes", ctl.Name)
		}
	}
}

func TestControlRefusals(t *testing.T) {
	cases := []struct{ name, spec, want string }{
		{"nothing to compare", strings.Replace(controlled, "matrix:\n  router.policy: [round_robin, cache_aware]\n", "", 1), "needs a comparison"},
		{"no prefixes", strings.Replace(controlled, "kind: shared_prefix\n  num_groups: 2\n  prompts_per_group: 4", "kind: random", 1), "shares no prefix"},
		{"no router", strings.Replace(controlled, "replicas: 2", "replicas: 1", 1), "runs no router"},
		{"unknown control", strings.Replace(controlled, "control: zero_reuse", "control: placebo", 1), `must be zero_reuse, got "placebo"`},
		{"in the matrix", strings.Replace(controlled, "control: zero_reuse", "", 1) + "  control: [zero_reuse]\n", "cannot be varied"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.spec), targetkinds.All())
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "control") {
			t.Errorf("%s: got %v, want an error at control saying %q", c.name, err, c.want)
		}
	}
}
