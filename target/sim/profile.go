package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
)

// Profile is the hardware model of one engine rank: how long a scheduler step
// takes and how fast KV moves between engines. Units are in the field names
// so specs and flags stay readable.
//
// A step with S sequences that prefills P tokens while D sequences decode
// over C context tokens in total takes
//
//	StepBaseMs + S·CPUUsPerSeq + P·PrefillUsPerToken + D·DecodeUsPerSeq + C·DecodeNsPerContextToken
//	  + GPUTimeScale · Model.StepMs(step)
//
// A calibrated profile (Model set, see stepmodel) has the GPU time from
// measured tables and StepBaseMs and CPUUsPerSeq as the engine's CPU
// overhead; a linear profile (Model nil, like "fast") only the linear terms,
// pd.md's "prefill ≈ a + b·tokens, decode step ≈ c + d·batch".
type Profile struct {
	Name string `yaml:"name" json:"name"`
	// StepBaseMs is the fixed cost of one step: the whole forward pass in a
	// linear profile, the scheduler and launch overhead in a calibrated one.
	StepBaseMs float64 `yaml:"step_base_ms" json:"step_base_ms"`
	// CPUUsPerSeq is the per-sequence CPU cost of a step (input
	// preparation, sampling, output processing).
	CPUUsPerSeq float64 `yaml:"cpu_us_per_seq" json:"cpu_us_per_seq"`
	// PrefillUsPerToken is the compute-bound cost of one prefill token.
	PrefillUsPerToken float64 `yaml:"prefill_us_per_token" json:"prefill_us_per_token"`
	// DecodeUsPerSeq is the cost of one decoding sequence in the batch.
	DecodeUsPerSeq float64 `yaml:"decode_us_per_seq" json:"decode_us_per_seq"`
	// DecodeNsPerContextToken is the attention cost per context token of the
	// decoding sequences (KV reads grow with context).
	DecodeNsPerContextToken float64 `yaml:"decode_ns_per_context_token" json:"decode_ns_per_context_token"`
	// GPUTimeScale multiplies the calibrated GPU time (1: as measured).
	GPUTimeScale float64 `yaml:"gpu_time_scale" json:"gpu_time_scale"`
	// KVBytesPerToken is 2 × layers × kv_heads × head_dim × bytes/element.
	KVBytesPerToken int `yaml:"kv_bytes_per_token" json:"kv_bytes_per_token"`
	// LinkGBps is the bandwidth of the link between a decode engine and one
	// prefill engine in GB/s; concurrent pulls over it share it.
	LinkGBps float64 `yaml:"link_gbps" json:"link_gbps"`
	// TransferLatencyMs is the fixed cost of launching one KV transfer.
	TransferLatencyMs float64 `yaml:"transfer_latency_ms" json:"transfer_latency_ms"`
	// KVDescriptorUs is the cost of posting one transfer descriptor; a pull
	// posts blocks × NumLayers × 2 (K and V) of them.
	KVDescriptorUs float64 `yaml:"kv_descriptor_us" json:"kv_descriptor_us"`
	// NumLayers is the model's layer count (descriptors per block / 2).
	NumLayers int `yaml:"num_layers" json:"num_layers"`
	// NumGPUBlocks is the KV capacity in blocks when the engine config does
	// not set num_gpu_blocks_override.
	NumGPUBlocks int `yaml:"num_gpu_blocks" json:"num_gpu_blocks"`
	// MaxNumSeqs and MaxNumBatchedTokens are the defaults for an engine
	// config that does not set them (vLLM V1's per-GPU server defaults in
	// calibrated profiles; 0: 256 and 8192).
	MaxNumSeqs          int `yaml:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens" json:"max_num_batched_tokens"`

	// Model is the calibrated step model (nil: a linear profile). It is
	// chosen by the profile's name, not by a spec field.
	Model *stepmodel.Model `yaml:"-" json:"-"`
	// Source says where the figures come from and how far they were
	// measured to be off: the profile's provenance, recorded with every
	// row it runs.
	Source string `yaml:"-" json:"provenance,omitempty"`
	// ContentHash digests everything the profile computes with (its
	// coefficients and, for a calibrated one, the architecture, GPU,
	// parallelism, precisions and tables version): rows of equal hashes
	// ran the same model of the hardware whatever it was named.
	ContentHash string `yaml:"-" json:"content_hash,omitempty"`

	// overlapCPU is vLLM's async scheduling (engine.async_scheduling):
	// the CPU part of a calibrated step runs while the GPU computes the
	// previous one, so a step takes the longer of the two, not their sum.
	overlapCPU bool
}

// Batch is one step's work; see stepmodel.Batch.
type Batch = stepmodel.Batch

// Chunk is one sequence's prefill in a step; see stepmodel.Chunk.
type Chunk = stepmodel.Chunk

// linearProfiles are the named linear profiles.
var linearProfiles = map[string]Profile{
	// fast is for tests: ~1 ms steps so suites finish quickly.
	"fast": {
		Name: "fast", StepBaseMs: 1, PrefillUsPerToken: 1, DecodeUsPerSeq: 10,
		DecodeNsPerContextToken: 0, KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 1,
		NumGPUBlocks: 4096, Source: "test profile, not a model of any hardware",
	},
}

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(linearProfiles))
	for n := range linearProfiles {
		names = append(names, n)
	}
	for _, e := range stepmodel.Catalogue() {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}

// LookupProfile returns a built-in profile by name: "fast", or a calibrated
// "<gpu>-<model>[-tp<N>]" (see stepmodel.Catalogue).
func LookupProfile(name string) (Profile, error) {
	if p, ok := linearProfiles[name]; ok {
		return p.WithHash(), nil
	}
	m, err := stepmodel.Lookup(name)
	if err != nil {
		return Profile{}, fmt.Errorf("unknown profile %q (built-in: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return CalibratedProfile(name, m), nil
}

// Validate reports every coefficient that cannot be used, each by its
// YAML name.
func (p Profile) Validate() error {
	var errs []error
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"step_base_ms", p.StepBaseMs}, {"cpu_us_per_seq", p.CPUUsPerSeq}, {"prefill_us_per_token", p.PrefillUsPerToken},
		{"decode_us_per_seq", p.DecodeUsPerSeq}, {"decode_ns_per_context_token", p.DecodeNsPerContextToken},
		{"transfer_latency_ms", p.TransferLatencyMs}, {"kv_descriptor_us", p.KVDescriptorUs}, {"gpu_time_scale", p.GPUTimeScale},
	} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			errs = append(errs, fmt.Errorf("profile %s: %s must be a finite number >= 0, got %v", p.Name, c.name, c.v))
		}
	}
	if p.Model == nil && p.StepBaseMs == 0 && p.PrefillUsPerToken == 0 && p.DecodeUsPerSeq == 0 {
		errs = append(errs, fmt.Errorf("profile %s: step_base_ms, prefill_us_per_token and decode_us_per_seq are all 0 (steps would take no time)", p.Name))
	}
	if p.Model != nil && !(p.GPUTimeScale > 0) {
		errs = append(errs, fmt.Errorf("profile %s: gpu_time_scale must be > 0 in a calibrated profile, got %v", p.Name, p.GPUTimeScale))
	}
	for _, c := range []struct {
		name string
		v    int
	}{
		{"kv_bytes_per_token", p.KVBytesPerToken}, {"num_gpu_blocks", p.NumGPUBlocks}, {"num_layers", p.NumLayers},
		{"max_num_seqs", p.MaxNumSeqs}, {"max_num_batched_tokens", p.MaxNumBatchedTokens},
	} {
		if c.v < 0 {
			errs = append(errs, fmt.Errorf("profile %s: %s must be >= 0, got %d", p.Name, c.name, c.v))
		}
	}
	if !(p.LinkGBps > 0) { // also NaN
		errs = append(errs, fmt.Errorf("profile %s: link_gbps must be > 0, got %v", p.Name, p.LinkGBps))
	}
	return errors.Join(errs...)
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
	cpu := p.StepBaseMs + float64(b.Seqs())*p.CPUUsPerSeq/1e3
	ms := float64(b.PrefillTokens())*p.PrefillUsPerToken/1e3 +
		float64(b.DecodeSeqs)*p.DecodeUsPerSeq/1e3 + float64(b.DecodeContext)*p.DecodeNsPerContextToken/1e6
	switch {
	case p.Model == nil:
		ms += cpu
	case p.overlapCPU:
		ms += max(cpu, p.GPUTimeScale*p.Model.StepMs(b))
	default:
		ms += cpu + p.GPUTimeScale*p.Model.StepMs(b)
	}
	// Rounded explicitly so that no fused multiply-add makes the same
	// profile give different steps on different CPUs.
	return time.Duration(math.Round(ms * 1e6))
}

// TransferTime is how long pulling the KV of tokens tokens takes over an
// idle link, with 16-token blocks: the launch latency, posting the
// descriptors, and the bytes at the link's bandwidth.
func (p Profile) TransferTime(tokens int) time.Duration {
	return p.transferSetup(tokens, defaultBlockSize) + p.linkTime(tokens)
}

// transferSetup is the part of a pull that does not use the link: the
// launch latency and the descriptor posting (blocks × layers × 2).
func (p Profile) transferSetup(tokens, blockSize int) time.Duration {
	descriptors := float64(ceilDiv(tokens, blockSize) * p.NumLayers * 2)
	return time.Duration(math.Round((p.TransferLatencyMs*1e3 + descriptors*p.KVDescriptorUs) * 1e3))
}

// linkTime is the time tokens' KV takes on an otherwise idle link.
func (p Profile) linkTime(tokens int) time.Duration {
	return time.Duration(math.Round(p.kvBytes(tokens) / p.LinkGBps))
}

// kvBytes is the KV of tokens tokens.
func (p Profile) kvBytes(tokens int) float64 { return float64(tokens) * float64(p.KVBytesPerToken) }

// WithHash is p with its ContentHash set from its content: its
// coefficients and what its step model computes with (architecture but not
// its name, GPU, parallelism, precisions, tables version and formula revision), never names or
// provenance.
func (p Profile) WithHash() Profile {
	c := p
	c.Name, c.Source, c.ContentHash, c.Model = "", "", "", nil
	h := sha256.New()
	fmt.Fprintf(h, "%+v", c)
	if m := p.Model; m != nil {
		arch := m.Arch
		arch.Name = ""
		fmt.Fprintf(h, "|%+v|%s|tp%d|ep%d|%+v|%+v|kv%v|measured %v|%s|%s", arch, m.GPU.Name, m.TP, m.EP, m.Prec, m.ExpertPrec,
			m.KVElemBytes, m.Measured, stepmodel.TablesVersion, stepmodel.FormulaRevision)
	}
	p.ContentHash = hex.EncodeToString(h.Sum(nil)[:8])
	return p
}
