package trials

import (
	"errors"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/target/static"
)

// minimal is a valid two-replica spec that tests modify.
const minimal = `name: t
seed: 3
topology:
  replicas: 2
  engine:
    model: m
router:
  policy: round_robin
workload:
  kind: random
  num_prompts: 10
`

func mustParse(t *testing.T, spec string) []Trial {
	t.Helper()
	trials, err := Parse([]byte(spec), targetkinds.All())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return trials
}

// specErr parses spec, wants a *SpecError and returns its field errors.
func specErr(t *testing.T, spec string) []*FieldError {
	t.Helper()
	_, err := Parse([]byte(spec), targetkinds.All())
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("Parse = %v, want *SpecError", err)
	}
	return se.Fields
}

func TestDefaults(t *testing.T) {
	tr := mustParse(t, minimal)
	if len(tr) != 1 {
		t.Fatalf("%d trials, want 1", len(tr))
	}
	s := tr[0].Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", s.Name, "t"},
		{"target.kind", s.Target.Kind, simtarget.Kind},
		{"target.profile", s.Target.Options.(*simtarget.Options).Profile, simtarget.DefaultProfile},
		{"warmup.requests", s.Warmup.Requests, DefaultWarmupRequests},
		{"router.launch", s.Router.Launch, LaunchEmbedded},
		{"router.port", s.Router.Port, 0},
		{"router.retry.max_retries (router default)", s.Router.Retry.MaxRetries, 5},
		{"workload.endpoint", s.Workload.Endpoint, EndpointCompletions},
		{"workload.output_len (driver default)", s.Workload.OutputLen, 128},
		{"gate.reference", s.Gate.Reference, ReferenceSim},
		{"gate.prompts", s.Gate.Prompts.N(), DefaultGatePrompts},
		{"gate.kl_threshold", s.Gate.KLThreshold, DefaultKLThreshold},
		{"sweep id", tr[0].SweepID, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(tr[0].SpecHash) != 64 {
		t.Errorf("SpecHash = %q, want 64 hex digits", tr[0].SpecHash)
	}
}

func TestExplicitZeroWarmupIsKept(t *testing.T) {
	s := mustParse(t, minimal+"warmup:\n  requests: 0\n")[0]
	if s.Warmup.Requests != 0 {
		t.Errorf("warmup.requests = %d, want the explicit 0", s.Warmup.Requests)
	}
}

func TestSingleReplicaLaunchesNoRouter(t *testing.T) {
	one := strings.Replace(minimal, "replicas: 2", "replicas: 1", 1)
	a := mustParse(t, one)[0]
	b := mustParse(t, strings.Replace(one, "policy: round_robin", "policy: cache_aware\n  cache_threshold: 0.9", 1))[0]
	if a.RouterLaunched() {
		t.Error("one replica without PD launches a router")
	}
	if a.Router.Policy != "" || a.Router.Launch != "" {
		t.Errorf("ignored router section kept: %+v", a.Router)
	}
	if a.SpecHash != b.SpecHash {
		t.Error("an ignored router section changed the spec hash")
	}
	// Without any topology the default is one replica.
	c := mustParse(t, "name: x\ntopology:\n  engine: {model: m}\nworkload: {kind: shared_prefix}\n")[0]
	if c.Topology.Replicas != 1 || c.RouterLaunched() {
		t.Errorf("default topology = %+v", c.Topology)
	}
}

func TestHashIgnoresFormattingButNotValues(t *testing.T) {
	a := mustParse(t, minimal)[0]
	reordered := "# comment\nworkload: {kind: random, num_prompts: 10}\nrouter: {policy: round_robin}\n" +
		"topology:\n  engine: {model: m}\n  replicas: 2\nseed: 3\nname: t\n"
	b := mustParse(t, reordered)[0]
	if a.SpecHash != b.SpecHash {
		t.Error("reformatting the same spec changed its hash")
	}
	c := mustParse(t, strings.Replace(minimal, "seed: 3", "seed: 4", 1))[0]
	if a.SpecHash == c.SpecHash {
		t.Error("changing the seed kept the hash")
	}
	// Writing a default explicitly is the same trial.
	d := mustParse(t, minimal+"warmup: {requests: 100}\n")[0]
	if a.SpecHash != d.SpecHash {
		t.Error("an explicit default changed the hash")
	}
}

func TestDataParallelFollowsEngine(t *testing.T) {
	s := mustParse(t, strings.Replace(minimal, "model: m", "model: m\n    data_parallel_size: 4", 1))[0]
	if s.Router.IntraNodeDataParallelSize != 4 {
		t.Errorf("router.intra_node_data_parallel_size = %d, want the engine's 4", s.Router.IntraNodeDataParallelSize)
	}
}

func TestStaticTopologyFromURLs(t *testing.T) {
	s := mustParse(t, `name: s
target:
  kind: static
  hardware: 3xL4
  prefill: [http://10.0.0.1:8000]
  decode: [http://10.0.0.2:8000, http://10.0.0.3:8000]
topology:
  engine: {model: m}
router:
  pd_disaggregation: true
  prefill_policy: round_robin
  decode_policy: round_robin
  kv_connector: nixl
workload: {kind: random, num_prompts: 5}
`)[0]
	if s.Topology.Prefill != 1 || s.Topology.Decode != 2 || s.Topology.Replicas != 0 {
		t.Errorf("topology = %+v, want prefill 1 decode 2 from the URLs", s.Topology)
	}
	if s.Gate.Reference != ReferenceNone {
		t.Errorf("gate.reference = %q, want none for a non-sim target", s.Gate.Reference)
	}
	if o := s.Target.Options.(*static.Options); o.HealthPath != "/health" {
		t.Errorf("health_path = %q", o.HealthPath)
	}
}

// docs/spec.md: a static target without topology.replicas gets one
// replica per URL (it got 1 whatever the list said, so a two-URL target
// ran without a router on its first worker).
func TestStaticReplicasFromWorkerURLs(t *testing.T) {
	s := mustParse(t, `name: s
target: {kind: static, hardware: 2xL4, workers: [http://10.0.0.1:8000, http://10.0.0.2:8000]}
topology: {engine: {model: m}}
workload: {kind: random, num_prompts: 5}
`)[0]
	if s.Topology.Replicas != 2 || s.Topology.PD() || !s.RouterLaunched() {
		t.Errorf("topology = %+v, router launched %v; want 2 replicas behind a router", s.Topology, s.RouterLaunched())
	}
}

func TestParsedChecks(t *testing.T) {
	s := mustParse(t, minimal+"assert: ['p99_ttft_ms < 500', 'output_throughput >= 10']\nbaseline: 17\n")[0]
	if len(s.Assertions) != 2 || s.Assertions[0] != (Assertion{"p99_ttft_ms", "<", 500}) {
		t.Errorf("assertions = %+v", s.Assertions)
	}
	if s.Tolerance != DefaultTolerance || s.ToleranceFraction != 0.1 {
		t.Errorf("tolerance %q = %v, want 10%% = 0.1", s.Tolerance, s.ToleranceFraction)
	}
	if len(s.BaselineMetrics) != len(DefaultBaselineMetrics) {
		t.Errorf("baseline_metrics = %v", s.BaselineMetrics)
	}
	// The trial's list is its own: editing it leaves the default alone.
	want := DefaultBaselineMetrics[0]
	s.BaselineMetrics[0] = "edited"
	if DefaultBaselineMetrics[0] != want {
		t.Errorf("editing a trial's baseline_metrics changed DefaultBaselineMetrics to %v", DefaultBaselineMetrics)
	}
}

func TestLoadNamesFromFile(t *testing.T) {
	path := t.TempDir() + "/nightly.yaml"
	writeFile(t, path, strings.Replace(minimal, "name: t\n", "", 1))
	tr, err := Load(path, targetkinds.All())
	if err != nil {
		t.Fatal(err)
	}
	if tr[0].Name != "nightly" {
		t.Errorf("name = %q, want the file's stem", tr[0].Name)
	}
	writeFile(t, path, minimal+"bogus: 1\n")
	_, err = Load(path, targetkinds.All())
	if err == nil || !strings.HasPrefix(err.Error(), "invalid spec "+path+": bogus: unknown key") {
		t.Errorf("err = %v, want it to name the file and the key", err)
	}
}

// A fraction where an integer is wanted is an error naming the field, not
// a silent truncation (replicas: 2.5 ran 2 replicas); whole floats are
// read as integers.
func TestFractionWhereIntegerIsAnError(t *testing.T) {
	fields := specErr(t, `name: f
topology: {replicas: 2.5, engine: {model: m, max_num_seqs: 3.7}}
router: {retry: {max_retries: 2.2}}
workload: {kind: random, num_prompts: 10, input_len: 1e3, output_len: 2.0}
warmup: {requests: 1.5}
gate: {prompts: 0.5}
matrix:
  workload.num_prompts: [10, 12.5]
`)
	want := map[string]string{
		"topology.replicas": "2.5", "topology.engine.max_num_seqs": "3.7", "router.retry.max_retries": "2.2",
		"warmup.requests": "1.5", "gate.prompts": "0.5", "workload.num_prompts": "12.5",
	}
	for _, f := range fields {
		v, ok := want[f.Path]
		if !ok || !strings.Contains(f.Msg, "must be a whole number, got "+v) {
			t.Errorf("unexpected problem %v", f)
			continue
		}
		delete(want, f.Path)
	}
	for path := range want {
		t.Errorf("no problem reported for %s", path)
	}
	s := mustParse(t, strings.Replace(minimal, "num_prompts: 10", "num_prompts: 1e2\n  input_len: 64.0", 1))[0]
	if s.Workload.NumPrompts != 100 || s.Workload.InputLen != 64 {
		t.Errorf("num_prompts %d input_len %d, want 100 and 64 from whole floats", s.Workload.NumPrompts, s.Workload.InputLen)
	}
}
