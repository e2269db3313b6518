package gate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Config says what the gate sends and what it accepts.
type Config struct {
	Model        string
	Prompts      int     // number of gate prompts
	PromptTokens int     // tokens per generated prompt
	MaxTokens    int     // output tokens compared per prompt
	TopLogprobs  int     // k of the top-k distributions compared
	KLThreshold  float64 // pass when the mean per-prompt KL is at or below this
	Seed         uint64  // prompts are a pure function of the seed
	// Texts, when set, are the prompts themselves (Prompts and PromptTokens
	// are then ignored).
	Texts []string
	// Concurrency bounds the gate requests in flight (0: DefaultConcurrency).
	Concurrency int
}

// Result is the gate's verdict and the figures behind it.
type Result struct {
	Passed         bool      `json:"passed"`
	KLMean         float64   `json:"kl_mean"`
	KLMax          float64   `json:"kl_max"`
	KLThreshold    float64   `json:"kl_threshold"`
	Prompts        int       `json:"prompts"`
	TokenMismatch  int       `json:"token_mismatches"` // output positions whose chosen token differs
	PerPromptKL    []float64 `json:"per_prompt_kl"`
	ReferenceModel string    `json:"reference_model"`
}

// Prompts returns the gate's prompts: natural text from the shared
// tokenizer, seeded, so every trial of a sweep is gated on the same inputs.
func Prompts(cfg Config) []string {
	if cfg.Texts != nil {
		return cfg.Texts
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x9a7e))
	out := make([]string, cfg.Prompts)
	for i := range out {
		out[i] = tokenizer.Generate(r, cfg.PromptTokens)
	}
	return out
}

// DefaultConcurrency is how many gate requests are in flight at once when
// Config.Concurrency is 0: a default gate (4 prompts, deployment and
// reference) sends all of them together.
const DefaultConcurrency = 8

// Run sends every gate prompt to candidateURL and referenceURL (base URLs of
// OpenAI-compatible servers) and compares the answers. Requests go out
// concurrently, at most cfg.Concurrency at a time (the answers are compared
// in prompt order, so the result does not depend on arrival order); the
// first failure, in prompt order, ends the gate.
func Run(ctx context.Context, client *http.Client, candidateURL, referenceURL string, cfg Config) (Result, error) {
	if cfg.Texts != nil {
		cfg.Prompts = len(cfg.Texts)
	}
	if cfg.Prompts <= 0 || cfg.MaxTokens <= 0 || cfg.TopLogprobs <= 0 || cfg.Concurrency < 0 {
		return Result{}, fmt.Errorf("gate: prompts, max_tokens and top_logprobs must be positive and concurrency not negative (got %d, %d, %d, %d)",
			cfg.Prompts, cfg.MaxTokens, cfg.TopLogprobs, cfg.Concurrency)
	}
	prompts := Prompts(cfg)
	sides := [2]struct{ name, url string }{{"reference", referenceURL}, {"deployment", candidateURL}}
	answers := make([][2]answer, len(prompts))
	errs := make([][2]error, len(prompts))
	// The first failure cancels the requests still running (with a plain
	// cancellation, so they are told apart from real failures below).
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var g errgroup.Group
	g.SetLimit(cmp.Or(cfg.Concurrency, DefaultConcurrency))
	for i, prompt := range prompts {
		for s, side := range sides {
			g.Go(func() error {
				answers[i][s], errs[i][s] = complete(gctx, client, side.url, cfg, prompt)
				if errs[i][s] != nil {
					cancel()
				}
				return errs[i][s]
			})
		}
	}
	if g.Wait() != nil {
		return Result{}, firstFailure(ctx, errs, sides)
	}
	res := Result{KLThreshold: cfg.KLThreshold, Prompts: cfg.Prompts, ReferenceModel: cfg.Model}
	total := 0.0
	for _, a := range answers {
		ref, cand := a[0], a[1]
		kl := promptKL(ref.positions, cand.positions)
		res.PerPromptKL = append(res.PerPromptKL, kl)
		total += kl
		res.KLMax = max(res.KLMax, kl)
		res.TokenMismatch += mismatches(ref.tokens, cand.tokens)
	}
	res.KLMean = total / float64(cfg.Prompts)
	res.Passed = res.KLMean <= cfg.KLThreshold
	return res, nil
}

// firstFailure is the first error in prompt order that is not merely a
// request cancelled because another failed (unless ctx itself ended).
func firstFailure(ctx context.Context, errs [][2]error, sides [2]struct{ name, url string }) error {
	var first error
	for i := range errs {
		for s, err := range errs[i] {
			if err == nil {
				continue
			}
			err = fmt.Errorf("gate prompt %d on %s: %w", i, sides[s].name, err)
			if !errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return err
			}
			if first == nil {
				first = err
			}
		}
	}
	return first
}

func mismatches(a, b []string) int {
	n := max(len(a), len(b))
	diff := 0
	for i := range n {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			diff++
		}
	}
	return diff
}

type answer struct {
	tokens    []string
	positions []position
}

// completionResponse is the part of an OpenAI completions answer the gate reads.
type completionResponse struct {
	Choices []struct {
		Logprobs *struct {
			Tokens      []string             `json:"tokens"`
			TopLogprobs []map[string]float64 `json:"top_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
}

func complete(ctx context.Context, client *http.Client, baseURL string, cfg Config, prompt string) (answer, error) {
	body, err := json.Marshal(map[string]any{
		"model":       cfg.Model,
		"prompt":      prompt,
		"max_tokens":  cfg.MaxTokens,
		"temperature": 0,
		"logprobs":    cfg.TopLogprobs,
		"ignore_eos":  true,
	})
	if err != nil {
		return answer{}, fmt.Errorf("encoding request: %w", err)
	}
	url := strings.TrimRight(baseURL, "/") + "/v1/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("posting %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return answer{}, fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return answer{}, fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, bytes.TrimSpace(raw))
	}
	var cr completionResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return answer{}, fmt.Errorf("decoding %s answer: %w", url, err)
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Logprobs == nil {
		return answer{}, errors.New("answer has no logprobs: the server must support the completions logprobs parameter")
	}
	lp := cr.Choices[0].Logprobs
	a := answer{tokens: lp.Tokens, positions: make([]position, len(lp.TopLogprobs))}
	for i, m := range lp.TopLogprobs {
		a.positions[i] = m
	}
	return a, nil
}
