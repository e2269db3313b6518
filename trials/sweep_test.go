package trials

import (
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/driver/arrival"
)

const sweepSpec = `name: sw
topology:
  replicas: 2
  engine:
    model: m
router:
  policy: round_robin
workload:
  kind: random
  num_prompts: 10
  arrival:
    kind: sweep
    rates: 3
    max_concurrency: 8
slo:
  tpot_ms: 25
`

// TestSweepRunsShareTheStream: a sweep parses to one trial; each of its
// runs has the run's arrival, a name saying which run it is, its own spec
// hash, the sweep's id and the sweep's stream (same request bytes).
func TestSweepRunsShareTheStream(t *testing.T) {
	tr := mustParse(t, sweepSpec)
	if len(tr) != 1 || !tr[0].IsSweep() || tr[0].SweepRates() != 3 {
		t.Fatalf("parsed %d trials (sweep %v, rates %d), want one sweep of 3 rates", len(tr), tr[0].IsSweep(), tr[0].SweepRates())
	}
	sw := tr[0]
	cases := []struct {
		role string
		rate float64
		name string
		want arrival.Arrival
	}{
		{SweepSynchronous, 0, "sw/sweep=synchronous", arrival.Arrival{Kind: arrival.ClosedLoop, MaxConcurrency: 1}},
		{SweepThroughput, 0, "sw/sweep=throughput", arrival.Arrival{Kind: arrival.Inf, MaxConcurrency: 8}},
		{SweepRate, 12.34567, "sw/workload.arrival.request_rate=12.35", arrival.Arrival{Kind: arrival.Constant, RequestRate: 12.35, MaxConcurrency: 8}},
	}
	hashes := map[string]bool{sw.SpecHash: true}
	var id string
	for _, c := range cases {
		run, err := sw.SweepRun(c.role, c.rate)
		if err != nil {
			t.Fatal(err)
		}
		if run.Name != c.name || run.Workload.Arrival != c.want || run.StreamID() != "sw" || run.IsSweep() {
			t.Errorf("%s: name %q arrival %+v stream %q; want %q %+v sw", c.role, run.Name, run.Workload.Arrival, run.StreamID(), c.name, c.want)
		}
		if hashes[run.SpecHash] {
			t.Errorf("%s: spec hash %s repeats another run's", c.role, run.SpecHash)
		}
		hashes[run.SpecHash] = true
		if run.SweepID == "" || id != "" && run.SweepID != id {
			t.Errorf("%s: sweep id %q, want one shared id", c.role, run.SweepID)
		}
		id = run.SweepID
	}
	if sw.SweepID != "" {
		t.Errorf("the sweep definition has sweep id %q; its runs carry it", sw.SweepID)
	}
}

// TestSweepInAMatrixKeepsTheMatrixID: each matrix trial sweeps; its runs
// keep the matrix's sweep id (rows of one spec never mark each other stale)
// and append to the matrix name.
func TestSweepInAMatrixKeepsTheMatrixID(t *testing.T) {
	tr := mustParse(t, sweepSpec+"matrix:\n  router.policy: [round_robin, cache_aware]\n")
	if len(tr) != 2 {
		t.Fatalf("%d trials, want 2", len(tr))
	}
	run, err := tr[1].SweepRun(SweepRate, 5)
	if err != nil {
		t.Fatal(err)
	}
	if run.SweepID != tr[1].SweepID || run.Name != "sw/router.policy=cache_aware,workload.arrival.request_rate=5" {
		t.Errorf("run %q sweep id %q; want the matrix's %q", run.Name, run.SweepID, tr[1].SweepID)
	}
}

func TestSweepNeedsAnSLO(t *testing.T) {
	spec := strings.Replace(sweepSpec, "slo:\n  tpot_ms: 25\n", "baseline: x\nrepeats: 3\n", 1)
	spec = strings.Replace(spec, "    rates: 3\n", "    rates: 3\n    burstiness: 2\n", 1)
	var got []string
	for _, f := range specErr(t, spec) {
		got = append(got, f.Path)
	}
	for _, want := range []string{"slo", "workload.arrival.burstiness", "baseline", "repeats"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("problems %v do not name %s", got, want)
		}
	}
}
