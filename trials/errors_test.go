package trials

import (
	"os"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestErrorsNamePaths checks that each kind of mistake is reported at its
// path and line, with a message that says what is wrong.
func TestErrorsNamePaths(t *testing.T) {
	pd := `name: p
topology:
  prefill: 1
  decode: 2
  engine: {model: m}
router:
  pd_disaggregation: true
  decode_policy: round_robin
  kv_connector: nixl
workload: {kind: random, num_prompts: 5}
`
	for _, tc := range []struct {
		name, spec, path, msg string
		line                  int
	}{
		{"unknown key", strings.Replace(minimal, "replicas: 2", "replica: 2", 1), "topology.replica", `unknown key; did you mean "replicas"?`, 4},
		{"unknown top-level key", minimal + "warmpu: {requests: 1}\n", "warmpu", `did you mean "warmup"?`, 12},
		{"unknown router key", strings.Replace(minimal, "policy: round_robin", "polcy: round_robin", 1), "router.polcy", `did you mean "policy"?`, 8},
		{"type", strings.Replace(minimal, "replicas: 2", "replicas: two", 1), "topology.replicas", "cannot use string `two` as int", 4},
		{"zero replicas", strings.Replace(minimal, "replicas: 2", "replicas: 0", 1), "topology.replicas", "must be ≥ 1", 4},
		{"pd policy", pd, "router.prefill_policy", "required when pd_disaggregation is true", 6},
		{"pd without topology", strings.Replace(minimal, "policy: round_robin", "policy: round_robin\n  pd_disaggregation: true", 1), "router.pd_disaggregation", "needs topology.prefill and topology.decode", 9},
		{"topology pd without router pd", strings.Replace(pd, "pd_disaggregation: true", "policy: random", 1), "router.pd_disaggregation", "must be true when topology sets prefill and decode", 6},
		{"replicas and pd", strings.Replace(pd, "prefill: 1", "prefill: 1\n  replicas: 2", 1), "topology.replicas", "must not be set with prefill and decode", 4},
		{"bad policy", strings.Replace(minimal, "round_robin", "fastest", 1), "router.policy", "must be one of", 8},
		{"dp mismatch", strings.Replace(minimal, "policy: round_robin", "policy: round_robin\n  intra_node_data_parallel_size: 2", 1), "router.intra_node_data_parallel_size", "must equal topology.engine.data_parallel_size (1), got 2", 9},
		{"router port", strings.Replace(minimal, "policy: round_robin", "policy: round_robin\n  port: 8080", 1), "router.port", "set per trial", 9},
		{"router workers", strings.Replace(minimal, "policy: round_robin", "policy: round_robin\n  worker_urls: [http://a:1]", 1), "router.worker_urls", "set per trial", 9},
		{"bad launch", strings.Replace(minimal, "policy: round_robin", "policy: round_robin\n  launch: docker", 1), "router.launch", "must be one of embedded, process, external", 9},
		{"external without binary", strings.Replace(minimal, "policy: round_robin", "policy: round_robin\n  launch: external", 1), "router.binary", "required when launch is external", 7},
		{"missing model", strings.Replace(minimal, "model: m", "max_num_seqs: 4", 1), "topology.engine.model", "required", 5},
		{"assert", minimal + "assert:\n  - p99_ttft_ms < 500\n  - p99_ttft_ms ~ 3\n", "assert[1]", "want METRIC OP NUMBER", 14},
		{"assert metric", minimal + "assert: ['p99_latency < 5']\n", "assert[0]", `unknown metric "p99_latency"`, 12},
		{"tolerance without baseline", minimal + "tolerance: 5%\n", "tolerance", "needs a baseline", 12},
		{"bad tolerance", minimal + "baseline: x\ntolerance: lots\n", "tolerance", "want a percentage", 13},
		{"gate url", minimal + "gate: {reference: url}\n", "gate.url", "required when reference is url", 12},
		{"gate prompts", minimal + "gate: {prompts: many}\n", "gate.prompts", "must be a count or a list", 12},
		{"gate top_logprobs", minimal + "gate: {top_logprobs: 50}\n", "gate.top_logprobs", "must be ≤ 20", 12},
		{"workload kind", strings.Replace(minimal, "kind: random", "kind: chaos", 1), "workload.kind", "unknown workload kind", 10},
		{"workload knob of another kind", strings.Replace(minimal, "num_prompts: 10", "num_prompts: 10\n  num_groups: 4", 1), "workload.num_groups", "not a knob of kind random", 12},
		{"workload arrival", minimal + "  arrival: {kind: constant}\n", "workload.arrival.request_rate", "needs a finite rate", 12},
		{"random without count", strings.Replace(minimal, "  num_prompts: 10\n", "", 1), "workload.num_prompts", "required for kind random", 9},
		{"no workload", strings.Replace(minimal, "workload:\n  kind: random\n  num_prompts: 10\n", "", 1), "workload.kind", "required", 1},
		{"bad name", strings.Replace(minimal, "name: t", "name: my trial", 1), "name", "must be letters", 1},
		{"static key on process", minimal + "target:\n  kind: process\n  command: x --port {port}\n  workers: ['http://a:1']\n", "target.workers", "only for kind static (kind is process)", 15},
		{"static profile", minimal + "target: {kind: static, workers: ['http://a:1', 'http://b:1'], profile: turbo}\n", "target.profile", `unknown profile "turbo"`, 12},
		{"static overrides without profile", minimal + "target: {kind: static, workers: ['http://a:1', 'http://b:1'], profile_overrides: {step_base_ms: 1}}\n", "target.profile_overrides", "only with a profile", 12},
		{"process without port", minimal + "target:\n  kind: process\n  command: vllm serve {model}\n", "target.command", "must pass {port}", 14},
		{"process ignores engine args", strings.Replace(minimal, "model: m", "model: m\n    max_num_seqs: 8", 1) + "target: {kind: process, command: 'vllm serve {model} --port {port}'}\n", "target.command", "would be ignored", 13},
		{"process placeholder", minimal + "target: {kind: process, command: 'vllm serve --port {prot}'}\n", "target.command", "unknown placeholder {prot}", 12},
		{"static count mismatch", strings.Replace(minimal, "replicas: 2", "replicas: 3", 1) + "target: {kind: static, workers: ['http://a:1', 'http://b:1']}\n", "topology.replicas", "is 3 but target lists 2 URLs", 4},
		{"static bad url", minimal + "target: {kind: static, workers: ['a:1', 'http://b:1']}\n", "target.workers[0]", "must be an http(s) URL", 12},
		{"duration", minimal + "target: {kind: process, command: 'x --port {port}', startup_timeout: 10}\n", "target.startup_timeout", "as duration (e.g. 30s)", 12},
		{"sim profile", minimal + "target: {profile: turbo}\n", "target.profile", `unknown profile "turbo"`, 12},
		{"sim override key", minimal + "target:\n  profile: fast\n  profile_overrides: {step_ms: 1}\n", "target.profile_overrides.step_ms", "not a profile field", 14},
		{"sim override value", minimal + "target:\n  profile: fast\n  profile_overrides: {link_gbps: 0}\n", "target.profile_overrides", "link_gbps must be > 0", 14},
		{"syntax", minimal + "router: [\n", "", "YAML syntax", 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := specErr(t, tc.spec)
			for _, f := range fields {
				if f.Path == tc.path && strings.Contains(f.Msg, tc.msg) {
					if f.Line != tc.line {
						t.Errorf("%s: line %d, want %d", f, f.Line, tc.line)
					}
					return
				}
			}
			t.Errorf("no error %s: …%s…; got %v", tc.path, tc.msg, fields)
		})
	}
}

func TestSpecErrorText(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(minimal, "replicas: 2", "replicas: 0", 1)+"assert: ['x']\n"), targetkinds.All())
	want := "invalid spec: 2 problems:\n  topology.replicas: must be ≥ 1 (line 4)\n  assert[0]: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err =\n%v\nwant prefix\n%s", err, want)
	}
}
