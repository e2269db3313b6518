package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Profile is the hardware model of one engine rank: how long a scheduler step
// takes and how fast KV moves between engines. Units are in the field names
// so specs and flags stay readable.
//
// A step that prefills P tokens while D sequences decode over C context
// tokens in total takes
//
//	StepBaseMs + P·PrefillUsPerToken + D·DecodeUsPerSeq + C·DecodeNsPerContextToken
//
// which is pd.md's "prefill ≈ a + b·tokens, decode step ≈ c + d·batch" with the
// decode term split into a per-sequence and a per-context-token part.
type Profile struct {
	Name string `yaml:"name" json:"name"`
	// StepBaseMs is the fixed cost of one forward pass (weights read once).
	StepBaseMs float64 `yaml:"step_base_ms" json:"step_base_ms"`
	// PrefillUsPerToken is the compute-bound cost of one prefill token.
	PrefillUsPerToken float64 `yaml:"prefill_us_per_token" json:"prefill_us_per_token"`
	// DecodeUsPerSeq is the cost of one decoding sequence in the batch.
	DecodeUsPerSeq float64 `yaml:"decode_us_per_seq" json:"decode_us_per_seq"`
	// DecodeNsPerContextToken is the attention cost per context token of the
	// decoding sequences (KV reads grow with context).
	DecodeNsPerContextToken float64 `yaml:"decode_ns_per_context_token" json:"decode_ns_per_context_token"`
	// KVBytesPerToken is 2 × layers × kv_heads × head_dim × bytes/element.
	KVBytesPerToken int `yaml:"kv_bytes_per_token" json:"kv_bytes_per_token"`
	// LinkGBps is the KV transfer bandwidth between engines in GB/s.
	LinkGBps float64 `yaml:"link_gbps" json:"link_gbps"`
	// TransferLatencyMs is the fixed cost of launching one KV transfer.
	TransferLatencyMs float64 `yaml:"transfer_latency_ms" json:"transfer_latency_ms"`
	// NumGPUBlocks is the KV capacity in blocks when the engine config does
	// not set num_gpu_blocks_override.
	NumGPUBlocks int `yaml:"num_gpu_blocks" json:"num_gpu_blocks"`
}

// builtinProfiles are the named profiles. Sources are in the comments and in
// docs/sim.md.
var builtinProfiles = map[string]Profile{
	// Llama-3-8B on one H100 (bf16). From pd.md "Sizes and speeds": decode
	// step ≈ 4.5 ms + ~0.08 ms per sequence at 2k context (split here into
	// 20 µs per sequence + 30 ns per context token: 20 µs + 2048·30 ns ≈ 81 µs),
	// prefill ≈ 14–28 µs/token (midpoint 20 µs); KV 131,072 B/token; a
	// 400 Gb/s RDMA link (50 GB/s) and ~3 ms to launch a transfer (vLLM issue
	// 23780). Capacity: ~56 GB of KV at 2 MiB per 16-token block ≈ 28,000 blocks.
	"h100-llama3-8b": {
		Name: "h100-llama3-8b", StepBaseMs: 4.5, PrefillUsPerToken: 20, DecodeUsPerSeq: 20,
		DecodeNsPerContextToken: 30, KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 3,
		NumGPUBlocks: 28000,
	},
	// fast is for tests: ~1 ms steps so suites finish quickly, same shape.
	"fast": {
		Name: "fast", StepBaseMs: 1, PrefillUsPerToken: 1, DecodeUsPerSeq: 10,
		DecodeNsPerContextToken: 0, KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 1,
		NumGPUBlocks: 4096,
	},
}

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(builtinProfiles))
	for n := range builtinProfiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupProfile returns a built-in profile by name.
func LookupProfile(name string) (Profile, error) {
	p, ok := builtinProfiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (built-in: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// Validate reports the first coefficient that cannot be used.
func (p Profile) Validate() error {
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"step_base_ms", p.StepBaseMs}, {"prefill_us_per_token", p.PrefillUsPerToken},
		{"decode_us_per_seq", p.DecodeUsPerSeq}, {"decode_ns_per_context_token", p.DecodeNsPerContextToken},
		{"transfer_latency_ms", p.TransferLatencyMs},
	} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return fmt.Errorf("profile %s: %s must be a finite number >= 0, got %v", p.Name, c.name, c.v)
		}
	}
	if p.StepBaseMs == 0 && p.PrefillUsPerToken == 0 && p.DecodeUsPerSeq == 0 {
		return fmt.Errorf("profile %s: step_base_ms, prefill_us_per_token and decode_us_per_seq are all 0 (steps would take no time)", p.Name)
	}
	if p.KVBytesPerToken < 0 {
		return fmt.Errorf("profile %s: kv_bytes_per_token must be >= 0, got %d", p.Name, p.KVBytesPerToken)
	}
	if !(p.LinkGBps > 0) { // also NaN
		return fmt.Errorf("profile %s: link_gbps must be > 0, got %v", p.Name, p.LinkGBps)
	}
	if p.NumGPUBlocks < 0 {
		return fmt.Errorf("profile %s: num_gpu_blocks must be >= 0, got %d", p.Name, p.NumGPUBlocks)
	}
	return nil
}

// Batch is what one engine step computes: prefill chunks (each after the
// tokens of its sequence already in the KV cache) and one token for each
// decoding sequence.
type Batch struct {
	Chunks []Chunk
	// DecodeSeqs sequences decode one token each over DecodeContext
	// context tokens in total.
	DecodeSeqs, DecodeContext int
}

// Chunk is one sequence's prefill work in a step: Tokens new tokens after
// Prefix tokens whose KV is already computed (cached or earlier chunks).
type Chunk struct{ Tokens, Prefix int }

// PrefillTokens is the number of prefill tokens in b.
func (b *Batch) PrefillTokens() int {
	n := 0
	for _, c := range b.Chunks {
		n += c.Tokens
	}
	return n
}

// StepTime is the duration of one engine step that prefills prefillTokens
// (one chunk without a cached prefix) while decodeSeqs sequences decode over
// contextTokens context in total.
func (p Profile) StepTime(prefillTokens, decodeSeqs, contextTokens int) time.Duration {
	b := Batch{DecodeSeqs: decodeSeqs, DecodeContext: contextTokens}
	if prefillTokens > 0 {
		b.Chunks = []Chunk{{Tokens: prefillTokens}}
	}
	return p.BatchTime(&b)
}

// BatchTime is the duration of the step that computes b.
func (p Profile) BatchTime(b *Batch) time.Duration {
	ns := p.StepBaseMs*1e6 + float64(b.PrefillTokens())*p.PrefillUsPerToken*1e3 +
		float64(b.DecodeSeqs)*p.DecodeUsPerSeq*1e3 + float64(b.DecodeContext)*p.DecodeNsPerContextToken
	return time.Duration(ns)
}

// TransferTime is how long pulling the KV of tokens tokens takes.
func (p Profile) TransferTime(tokens int) time.Duration {
	bytes := float64(tokens) * float64(p.KVBytesPerToken)
	return time.Duration(p.TransferLatencyMs*1e6 + bytes/(p.LinkGBps*1e9)*1e9)
}
