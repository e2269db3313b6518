package adapter

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
)

// DecisionLine is one line of a decision record: the trial, one routing
// decision the router's own code made in it, and, for a measured request,
// what came of it.
type DecisionLine struct {
	Trial string `json:"trial"`
	virtual.Decision
	// Result is the measured request's outcome (nil for warm-up requests
	// and when the run kept no records).
	Result *DecisionResult `json:"result,omitempty"`
}

// DecisionResult is a measured request's outcome, from its record.
type DecisionResult struct {
	Success      bool    `json:"success"`
	TTFTMs       float64 `json:"ttft_ms"`
	E2ELMs       float64 `json:"e2el_ms"`
	OutputTokens int     `json:"output_tokens"`
	// CachedTokens is what the engine's usage reported as served from its
	// prefix cache (nil: not reported).
	CachedTokens *int `json:"cached_tokens,omitempty"`
}

// writeDecisions writes ds in the order they were made, each measured one
// with its request's outcome from res.
func writeDecisions(w io.Writer, trial string, ds []virtual.Decision, res *driver.Result) error {
	enc := json.NewEncoder(w)
	for _, d := range ds {
		line := DecisionLine{Trial: trial, Decision: d}
		if res != nil && !d.Warmup && d.ID >= 0 && d.ID < len(res.Requests) && res.Requests[d.ID].Index == d.ID {
			r := res.Requests[d.ID]
			line.Result = &DecisionResult{Success: r.Success, TTFTMs: r.TTFTMs, E2ELMs: r.E2ELMs, OutputTokens: r.OutputTokens, CachedTokens: r.CachedTokens}
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("recording decisions: %w", err)
		}
	}
	return nil
}
