package trials

import (
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/target/process"
)

// TestExamplesValidate loads every example spec and checks what each is for.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d example specs, want at least 4", len(files))
	}
	loaded := map[string][]Trial{}
	for _, f := range files {
		tr, err := Load(f, targetkinds.All())
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		loaded[filepath.Base(f)] = tr
	}

	qs := loaded["quickstart.yaml"]
	if len(qs) != 2 || qs[0].Router.Policy != "round_robin" || qs[1].Router.Policy != "cache_aware" {
		t.Errorf("quickstart: want a round_robin vs cache_aware sweep, got %d trials", len(qs))
	} else if qs[0].Workload.Kind != "shared_prefix" || qs[0].Topology.Replicas != 2 || qs[0].Seed != qs[1].Seed {
		t.Errorf("quickstart: want 2 replicas on shared_prefix traffic with one seed")
	}

	if pd := loaded["pd.yaml"]; len(pd) != 1 || pd[0].Topology.Prefill != 2 || pd[0].Topology.Decode != 6 || !pd[0].Router.PDDisaggregation {
		t.Errorf("pd: want prefill 2, decode 6 through the PD router")
	}
	if v := loaded["pd-vs-collocated.yaml"]; len(v) != 3 || v[0].Topology.Replicas != 8 || v[1].Topology.Prefill != 2 ||
		v[1].Topology.Decode != 6 || v[2].Topology.Prefill != 4 || v[2].Topology.Decode != 4 || v[0].SweepID != v[2].SweepID {
		t.Errorf("pd-vs-collocated: want c8, 2p6d and 4p4d in one sweep")
	}
	if g := loaded["vllm-gpu.yaml"]; len(g) == 0 || g[0].Target.Kind != process.Kind {
		t.Errorf("vllm-gpu: want a process target")
	}
	if sw := loaded["sweep.yaml"]; len(sw) != 1 || !sw[0].IsSweep() || sw[0].SweepRates() != 8 || sw[0].SLO.TPOTMs == 0 {
		t.Errorf("sweep: want one sweep trial of 8 rates with a TPOT SLO")
	}
	if ci := loaded["ci-smoke.yaml"]; len(ci) != 1 || len(ci[0].Assertions) == 0 || ci[0].Topology.Replicas != 2 {
		t.Errorf("ci-smoke: want one 2-replica trial with assertions")
	}
}

func TestStarterValidates(t *testing.T) {
	tr, err := Parse(Starter, targetkinds.All())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) == 0 || tr[0].Gate.Reference != ReferenceSim {
		t.Errorf("starter: %d trials", len(tr))
	}
}
