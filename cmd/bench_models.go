package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// modelCard is one entry of GET /v1/models. vLLM (and the sim) report the
// served context as max_model_len; other servers leave it out (0).
type modelCard struct {
	ID          string `json:"id"`
	MaxModelLen int    `json:"max_model_len"`
}

// listModels asks the server for its models with cfg's key and headers, as
// vllm bench serve does when --model is not given.
func listModels(ctx context.Context, cfg driver.Config) ([]modelCard, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.BaseURL, "/")+"/v1/models", nil)
	if err != nil {
		return nil, fmt.Errorf("listing models: %w", err)
	}
	for k, v := range cfg.Headers {
		req.Header.Set(k, v)
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing models: GET /v1/models: HTTP %d", resp.StatusCode)
	}
	var v struct {
		Data []modelCard `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return nil, fmt.Errorf("listing models: decoding GET /v1/models: %w", err)
	}
	return v.Data, nil
}

// firstModel is the server's first model, the default of --model.
func firstModel(ctx context.Context, cfg driver.Config) (string, error) {
	ms, err := listModels(ctx, cfg)
	if err != nil {
		return "", err
	}
	if len(ms) == 0 {
		return "", errors.New("listing models: GET /v1/models lists no model")
	}
	return ms[0].ID, nil
}

// checkContext refuses a run whose longest request (the one the run sends,
// workload.LongestRequest) the server's context cannot hold: the server would refuse
// it every time. The limit is the model's max_model_len from GET
// /v1/models where the server reports it; without it nothing is refused
// here, and the engine's own refusals are counted as ContextLengthExceeded.
func checkContext(ctx context.Context, f *benchFlags, cfg driver.Config) error {
	l, err := workload.LongestRequest(cfg.Workload, cfg.NumPrompts, cfg.Seed, cfg.TrialID, cfg.Tokenizer)
	if err != nil {
		return usageErr("%s", f.flagError(fmt.Errorf("workload.%w", err))) // flagError maps workload keys to flags
	}
	ms, err := listModels(ctx, cfg)
	if err != nil {
		return nil // the ready check reports an unreachable or refusing server
	}
	limit := 0
	for _, m := range ms {
		if m.ID == cfg.Model {
			limit = m.MaxModelLen
		}
	}
	if limit == 0 || l.Tokens() <= limit {
		return nil
	}
	where := "a request"
	if l.File != "" {
		where = fmt.Sprintf("--dataset-path %s line %d:", l.File, l.Line)
		if l.Line == 0 {
			where = fmt.Sprintf("--dataset-path %s: a request", l.File)
		}
	}
	return usageErr("%s asks for %d tokens (%d prompt + %d max_tokens) but %s serves a context of %d (max_model_len in GET /v1/models): the server refuses it every run; shorten the requests or raise the server's --max-model-len",
		where, l.Tokens(), l.InputTokens, l.OutputTokens, cfg.Model, limit)
}
