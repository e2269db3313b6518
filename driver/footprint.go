package driver

import (
	"fmt"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// A run generates every request's body before it starts and keeps every
// record until it ends. BenchmarkDriverMemory measured 9.4 KB of peak heap
// per request of 1024 input and 16 output tokens (0.6 KB kept afterwards);
// the coefficients below round that up, and bound the records' inter-token
// latencies and a multi_turn answer's text per output token.
const (
	bytesPerInputToken  = 12
	bytesPerOutputToken = 24
	bytesPerRequest     = 4 << 10
	// bodyBytesPerToken is a body's text: the sim tokenizer's words take 5.4
	// bytes a token, real vocabularies about 4.
	bodyBytesPerToken = 6
)

// MemoryEstimate is what a run of cfg is expected to hold at most.
type MemoryEstimate struct {
	// Bytes covers the measured and the warm-up requests' bodies and
	// records.
	Bytes int64
	// Measured is the measured stream's footprint (warm-up excluded).
	Measured workload.Footprint
	// Warmup is the number of warm-up requests.
	Warmup int
}

// EstimateMemory sizes a run of cfg from its workload's footprint, reading
// trace and dataset files as the run would. cfg's workload must be valid.
func EstimateMemory(cfg Config) (MemoryEstimate, error) {
	cfg = cfg.withDefaults()
	f, err := cfg.Workload.Footprint(cfg.NumPrompts)
	if err != nil {
		return MemoryEstimate{}, fmt.Errorf("sizing the workload: %w", err)
	}
	est := MemoryEstimate{Measured: f, Warmup: cfg.WarmupRequests}
	// Warm-up prompts have the measured stream's mean lengths.
	in := float64(f.InputTokens) + float64(est.Warmup)*f.MeanInput()
	out := float64(f.OutputTokens) + float64(est.Warmup)*f.MeanOutput()
	est.Bytes = int64(float64(f.Requests+est.Warmup)*bytesPerRequest + in*bytesPerInputToken + out*bytesPerOutputToken)
	return est, nil
}

// BodyBytes is about how many bytes a request body of tokens takes.
func BodyBytes(tokens float64) int64 { return int64(tokens*bodyBytesPerToken) + 512 }
