package trials

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// withValues returns minimal with each "dotted.path: value" (value in
// YAML) set, replacing what minimal had there.
func withValues(t *testing.T, base string, kv ...string) string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range kv {
		path, val, _ := strings.Cut(e, ": ")
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(val), &v); err != nil {
			t.Fatalf("value %q: %v", val, err)
		}
		if err := setPath(doc.Content[0], strings.Split(path, "."), v.Content[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Every count and size of a spec has an upper bound, and a value over it
// fails validation with an error naming the field (whatever else the
// oversized value also breaks).
func TestOversizedValuesNameTheField(t *testing.T) {
	urls := make([]string, 2000)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://10.0.%d.%d:8000", i/250, i%250)
	}
	headers := make([]string, 100)
	for i := range headers {
		headers[i] = fmt.Sprintf("X-H%d: v", i)
	}
	for _, tc := range []struct {
		set  []string
		path string
	}{
		{[]string{"topology.replicas: 10000"}, "topology.replicas"},
		{[]string{"topology.replicas: null", "topology.prefill: 5000", "topology.decode: 1"}, "topology.prefill"},
		{[]string{"topology.engine.num_gpu_blocks_override: 2000000000"}, "topology.engine.num_gpu_blocks_override"},
		{[]string{"topology.engine.max_model_len: 1000000000"}, "topology.engine.max_model_len"},
		{[]string{"topology.engine.max_num_seqs: 10000000"}, "topology.engine.max_num_seqs"},
		{[]string{"topology.engine.max_num_batched_tokens: 1000000000"}, "topology.engine.max_num_batched_tokens"},
		{[]string{"topology.engine.block_size: 1000000"}, "topology.engine.block_size"},
		{[]string{"topology.engine.tensor_parallel_size: 100000"}, "topology.engine.tensor_parallel_size"},
		{[]string{"topology.engine.data_parallel_size: 100000"}, "topology.engine.data_parallel_size"},
		{[]string{"workload.num_prompts: 1000000000"}, "workload.num_prompts"},
		{[]string{"workload.input_len: 100000000"}, "workload.input_len"},
		{[]string{"workload.output_len: 100000000"}, "workload.output_len"},
		{[]string{"workload.arrival: {max_concurrency: 10000000}"}, "workload.arrival.max_concurrency"},
		{[]string{"workload.arrival: {kind: poisson, request_rate: 1e9}"}, "workload.arrival.request_rate"},
		{[]string{"workload.arrival: {kind: gamma, request_rate: 10, burstiness: 1e9}"}, "workload.arrival.burstiness"},
		{[]string{"workload.arrival: {ramp_up_strategy: linear, ramp_up_start_rps: 1, ramp_up_end_rps: 1e9}"}, "workload.arrival.ramp_up_end_rps"},
		{[]string{"workload.max_seconds: 1e9"}, "workload.max_seconds"},
		{[]string{"workload.headers: {" + strings.Join(headers, ", ") + "}"}, "workload.headers"},
		{[]string{"workload: {kind: shared_prefix, num_groups: 100000, prompts_per_group: 1000}"}, "workload.prompts_per_group"},
		{[]string{"workload: {kind: shared_prefix, system_prompt_len: 100000000}"}, "workload.system_prompt_len"},
		{[]string{"workload: {kind: multi_turn, sessions: 1000000, turns: 1000}"}, "workload.turns"},
		{[]string{"workload: {kind: multi_turn, sessions: 10, think_time_ms: 1e12}"}, "workload.think_time_ms"},
		{[]string{"workload: {kind: trace, path: t.jsonl, time_scale: 1e12}"}, "workload.time_scale"},
		{[]string{"workload: {kind: trace, path: t.jsonl, window_end_s: 1e12}"}, "workload.window_end_s"},
		{[]string{"warmup.requests: 100000000"}, "warmup.requests"},
		{[]string{"slo.ttft_ms: 1e12"}, "slo.ttft_ms"},
		{[]string{"gate.prompts: 1000000"}, "gate.prompts"},
		{[]string{"gate.max_tokens: 1000000"}, "gate.max_tokens"},
		{[]string{"name: " + strings.Repeat("n", 2000)}, "name"},
		{[]string{"router.queue_size: 1000000000"}, "router.queue_size"},
		{[]string{"router.max_concurrent_requests: 1000000000"}, "router.max_concurrent_requests"},
		{[]string{"router.max_tree_size: 1099511627776"}, "router.max_tree_size"},
		{[]string{"router.max_payload_size: 1099511627776"}, "router.max_payload_size"},
		{[]string{"router.request_timeout_secs: 1e12"}, "router.request_timeout_secs"},
		{[]string{"router.idle_timeout_secs: 1e12"}, "router.idle_timeout_secs"},
		{[]string{"router.retry.max_retries: 1000000"}, "router.retry.max_retries"},
		{[]string{"router.max_run_ids: 1000000000"}, "router.max_run_ids"},
		{[]string{"target: {kind: sim, profile_overrides: {num_gpu_blocks: 2000000000}}"}, "target.profile_overrides.num_gpu_blocks"},
		{[]string{"target: {kind: process, command: 'vllm serve {model} --port {port}', startup_timeout: 1000h}", "target.hardware: h", "gate.reference: none"}, "target.startup_timeout"},
		{[]string{"target: {kind: process, command: 'vllm serve {model} --port {port}', stop_grace_period: 1000h}", "target.hardware: h", "gate.reference: none"}, "target.stop_grace_period"},
		{[]string{"target: {kind: static, workers: [" + strings.Join(urls, ", ") + "], health_timeout: 1000h}", "target.hardware: h", "gate.reference: none", "topology.replicas: null"}, "target.workers"},
		{[]string{"target: {kind: static, workers: [http://a:1, http://b:1], health_timeout: 1000h}", "target.hardware: h", "gate.reference: none"}, "target.health_timeout"},
	} {
		spec := withValues(t, minimal, tc.set...)
		fields := specErr(t, spec)
		found := false
		for _, f := range fields {
			if f.Path == tc.path && (strings.Contains(f.Msg, "must be ≤") || strings.Contains(f.Msg, "at most")) {
				found = true
			}
		}
		if !found {
			t.Errorf("%v: no bound named %s in %v", tc.set, tc.path, fields)
		}
	}
}

// The bounds leave room for large legitimate trials.
func TestLargeLegitimateSpecValidates(t *testing.T) {
	spec := withValues(t, minimal, "topology.replicas: 64", "workload.num_prompts: 1000000",
		"workload.input_len: 131072", "workload.arrival: {kind: poisson, request_rate: 5000, max_concurrency: 4096}",
		"topology.engine.max_model_len: 200000", "topology.engine.num_gpu_blocks_override: 1000000",
		"router.request_timeout_secs: 7200")
	mustParse(t, spec)
}

// A matrix whose trials together would hold too many nodes is refused
// before any is built.
func TestMatrixNodesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal + "gate:\n  prompts: [")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "p%d", i)
	}
	b.WriteString("]\nmatrix:\n  seed: [")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", i)
	}
	b.WriteString("]\n")
	fields := specErr(t, b.String())
	if len(fields) != 1 || fields[0].Path != "matrix" || !strings.Contains(fields[0].Msg, "nodes in all") {
		t.Errorf("got %v", fields)
	}
}
