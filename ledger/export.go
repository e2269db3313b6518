package ledger

import (
	"encoding/json"
	"reflect"
)

// VLLMResult renders a trial as the JSON `vllm bench serve --save-result`
// writes, so tools that read those files read autoinfer's too. Run
// parameters (request_rate, burstiness, max_concurrency, num_prompts,
// endpoint_type, backend) are taken from the workload JSON when it has keys
// of those names. With requests, the per-request arrays of --save-detailed
// are added (input_lens, output_lens, ttfts and itls in seconds, errors).
func VLLMResult(t Trial, reqs []Request) map[string]any {
	var wl map[string]any
	_ = json.Unmarshal(t.Workload, &wl) // absent or non-object workloads give no run parameters
	var engine struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(t.EngineConfig, &engine)
	out := map[string]any{
		"date":            t.StartedAt.Format("20060102-150405"),
		"endpoint_type":   orDefault(wl, "endpoint_type", "openai"),
		"backend":         orDefault(wl, "backend", "vllm"),
		"label":           t.Name,
		"model_id":        engine.Model,
		"tokenizer_id":    engine.Model,
		"num_prompts":     orDefault(wl, "num_prompts", t.Completed+t.Failed),
		"request_rate":    orDefault(wl, "request_rate", "inf"),
		"burstiness":      orDefault(wl, "burstiness", 1.0),
		"max_concurrency": orDefault(wl, "max_concurrency", nil),
	}
	metrics := map[string]float64{}
	numericFields(reflect.ValueOf(t.Metrics), metrics)
	for k, v := range metrics {
		out[k] = v
	}
	if len(reqs) > 0 {
		inLens, outLens := make([]int, len(reqs)), make([]int, len(reqs))
		ttfts, errs := make([]float64, len(reqs)), make([]string, len(reqs))
		itls := make([][]float64, len(reqs))
		for i, r := range reqs {
			inLens[i], outLens[i], ttfts[i], errs[i] = r.InputTokens, r.OutputTokens, r.TTFTMs/1000, r.Error
			itls[i] = make([]float64, len(r.ITLs))
			for j, v := range r.ITLs {
				itls[i][j] = v / 1000
			}
		}
		out["input_lens"], out["output_lens"], out["ttfts"], out["itls"], out["errors"] = inLens, outLens, ttfts, itls, errs
	}
	return out
}

func orDefault(m map[string]any, key string, def any) any {
	if v, ok := m[key]; ok {
		return v
	}
	return def
}
