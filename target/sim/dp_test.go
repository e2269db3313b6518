package sim_test

import (
	"net/http"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

func TestDataParallelRanks(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{Engine: engine.Config{DataParallelSize: 3}})
	gen := func(rank string) float64 {
		return metricWhere(t, url, "vllm:generation_tokens_total", map[string]string{"engine": rank})
	}
	body := map[string]any{"model": model, "prompt": "the cache", "max_tokens": 4, "ignore_eos": true, "temperature": 0}
	code, raw := post(t, url+"/v1/completions", body, "X-data-parallel-rank", "2")
	if code != http.StatusOK {
		t.Fatalf("rank 2: %d %s", code, raw)
	}
	if gen("2") != 4 || gen("0") != 0 || gen("1") != 0 {
		t.Fatalf("header rank 2: tokens per rank %v %v %v, want 0 0 4", gen("0"), gen("1"), gen("2"))
	}
	// Without the header requests go round-robin over the ranks.
	for range 3 {
		complete(t, url, body)
	}
	if gen("0") != 4 || gen("1") != 4 || gen("2") != 8 {
		t.Fatalf("round-robin: tokens per rank %v %v %v, want 4 4 8", gen("0"), gen("1"), gen("2"))
	}
	if code, _ := post(t, url+"/v1/completions", body, "X-data-parallel-rank", "3"); code != http.StatusBadRequest {
		t.Fatalf("rank 3 of 3: status %d, want 400", code)
	}
	if n := metricValue(t, url, "vllm:cache_config_info"); n != 3 {
		t.Fatalf("cache_config_info has %v series, want one per rank", n)
	}
}
