package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/router"
)

// precisePrefixSpec enables the sim's KV events with vLLM's engine
// argument and routes with precise_prefix; the router's streams come from
// the deployment.
const precisePrefixSpec = `name: precise
seed: 3
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine:
    model: sim-llama-3-8b
    extra_args: {kv_events_config: '{"enable_kv_cache_events": true, "publisher": "zmq"}'}
router: {policy: precise_prefix}
workload:
  kind: random
  input_len: 32
  prefix_len: 64
  output_len: 4
  num_prompts: 24
  arrival: {kind: poisson, request_rate: 40}
warmup: {requests: 2}
gate: {reference: none}
`

// A trial on the sim target with kv_events_config and precise_prefix
// records a router configuration naming each worker's event stream.
func TestTrialRunPrecisePrefixFollowsSimEvents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, spec := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "precise.yaml")
	writeFile(t, spec, precisePrefixSpec)
	if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %d, %v", len(rows), err)
	}
	var cfg router.Config
	if err := json.Unmarshal(rows[0].RouterConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Policy != "precise_prefix" || len(cfg.KVEvents) != 2 {
		t.Fatalf("recorded router config: policy %q, kv_events %+v; want both workers' streams", cfg.Policy, cfg.KVEvents)
	}
	for i, s := range cfg.KVEvents {
		if s.Worker != cfg.WorkerURLs[i] || s.Endpoint == "" || s.ReplayEndpoint == "" {
			t.Errorf("kv_events[%d] = %+v for workers %v", i, s, cfg.WorkerURLs)
		}
	}
	if rows[0].PrefixCacheHitRate == nil || *rows[0].PrefixCacheHitRate <= 0 {
		t.Errorf("prefix cache hit rate %v: the shared prefix should hit", rows[0].PrefixCacheHitRate)
	}
}
