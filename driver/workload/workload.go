package workload

import (
	"bytes"
	"fmt"
	"math"
	"net/textproto"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Workload kinds. sharegpt, sonnet, burstgpt and custom are vllm bench
// serve's dataset names and follow its sampling rules (docs/workloads.md).
const (
	Random       = "random"
	SharedPrefix = "shared_prefix"
	MultiTurn    = "multi_turn"
	Trace        = "trace"
	ShareGPT     = "sharegpt"
	Sonnet       = "sonnet"
	BurstGPT     = "burstgpt"
	Custom       = "custom"
)

// History modes of multi_turn.
const (
	HistoryActual    = "actual"    // earlier turns carry the server's real answers
	HistorySynthetic = "synthetic" // earlier turns carry seeded answers of output_len tokens
)

// Workload is what requests look like. Which knobs apply depends on Kind;
// setting a knob another kind uses is an error, so a typo cannot silently
// fall back to a default. Zero values mean the documented defaults.
type Workload struct {
	Kind string `yaml:"kind" json:"kind"`

	// random: input length uniform in [L(1−r), L(1+r)] (multi_turn: per user turn).
	// sonnet: input_len bounds the prompt, prefix_len is the shared prefix.
	InputLen   int     `yaml:"input_len,omitempty" json:"input_len,omitempty"`
	OutputLen  int     `yaml:"output_len,omitempty" json:"output_len,omitempty"`
	RangeRatio float64 `yaml:"range_ratio,omitempty" json:"range_ratio,omitempty"`
	PrefixLen  int     `yaml:"prefix_len,omitempty" json:"prefix_len,omitempty"`

	// shared_prefix (SGLang's generated-shared-prefix knobs).
	NumGroups       int     `yaml:"num_groups,omitempty" json:"num_groups,omitempty"`
	PromptsPerGroup int     `yaml:"prompts_per_group,omitempty" json:"prompts_per_group,omitempty"`
	SystemPromptLen int     `yaml:"system_prompt_len,omitempty" json:"system_prompt_len,omitempty"`
	QuestionLen     int     `yaml:"question_len,omitempty" json:"question_len,omitempty"`
	Zipf            float64 `yaml:"zipf,omitempty" json:"zipf,omitempty"`

	// multi_turn.
	Sessions    int     `yaml:"sessions,omitempty" json:"sessions,omitempty"`
	Turns       int     `yaml:"turns,omitempty" json:"turns,omitempty"`
	ThinkTimeMs float64 `yaml:"think_time_ms,omitempty" json:"think_time_ms,omitempty"`
	History     string  `yaml:"history,omitempty" json:"history,omitempty"`

	// trace, sharegpt, burstgpt, custom (and sonnet: another text than the
	// shipped sonnets).
	Path             string  `yaml:"path,omitempty" json:"path,omitempty"`
	TimeScale        float64 `yaml:"time_scale,omitempty" json:"time_scale,omitempty"`
	BlockSize        int     `yaml:"block_size,omitempty" json:"block_size,omitempty"`
	IgnoreTimestamps bool    `yaml:"ignore_timestamps,omitempty" json:"ignore_timestamps,omitempty"`
	// trace: the file's format (auto, mooncake, azure), the time window
	// [window_start_s, window_end_s) from the first request that is kept
	// (0, 0: all), and the number of leading hash_ids that name a session
	// when a line has no session_id (0: none).
	Format              string  `yaml:"format,omitempty" json:"format,omitempty"`
	WindowStartS        float64 `yaml:"window_start_s,omitempty" json:"window_start_s,omitempty"`
	WindowEndS          float64 `yaml:"window_end_s,omitempty" json:"window_end_s,omitempty"`
	SessionPrefixBlocks int     `yaml:"session_prefix_blocks,omitempty" json:"session_prefix_blocks,omitempty"`
	// UniquePrefixes makes every request's prefix its own (a zero-reuse
	// control): shared_prefix's system prompts, random's prefix_len tokens
	// and a trace's hash_id blocks are generated per request, at the same
	// lengths, so no two requests share a prefix block. The spec's
	// `control: zero_reuse` sets it on a comparison's control arms.
	UniquePrefixes bool `yaml:"unique_prefixes,omitempty" json:"unique_prefixes,omitempty"`
	// DisableShuffle keeps a sharegpt or custom file's order (vllm's
	// --disable-shuffle); otherwise the entries are shuffled by the seed.
	DisableShuffle bool `yaml:"disable_shuffle,omitempty" json:"disable_shuffle,omitempty"`

	// Every kind.
	IgnoreEOS   *bool   `yaml:"ignore_eos,omitempty" json:"ignore_eos,omitempty"`
	Temperature float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// Sampling parameters sent only when set (vllm bench serve's --top-p,
	// --top-k, --min-p).
	TopP float64 `yaml:"top_p,omitempty" json:"top_p,omitempty"`
	TopK int     `yaml:"top_k,omitempty" json:"top_k,omitempty"`
	MinP float64 `yaml:"min_p,omitempty" json:"min_p,omitempty"`
	// ExtraBody is merged into every request body (its keys win).
	ExtraBody map[string]any `yaml:"extra_body,omitempty" json:"extra_body,omitempty"`
	// Tokenizer is a Hugging Face tokenizer.json (a file, a directory that
	// holds one, or a model name found in the local Hugging Face cache) that
	// prompts are generated and counted with; empty means autoinfer/sim.
	Tokenizer string `yaml:"tokenizer,omitempty" json:"tokenizer,omitempty"`
	// Headers are sent with every request. They must hold no secret: a
	// spec names the environment variable of the API key in APIKeyEnv.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// APIKeyEnv names the environment variable whose value is sent as
	// "Authorization: Bearer …" (bench reads OPENAI_API_KEY by default).
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// RequestIDPrefix sends X-Request-Id: PREFIX{index} with every request.
	RequestIDPrefix string `yaml:"request_id_prefix,omitempty" json:"request_id_prefix,omitempty"`
	// MaxSeconds bounds the measured run (guidellm's --max-seconds):
	// requests not sent by then are not_sent, those in flight incomplete.
	MaxSeconds float64 `yaml:"max_seconds,omitempty" json:"max_seconds,omitempty"`
}

// knobs lists the yaml keys each kind accepts besides the common ones.
var knobs = map[string][]string{
	Random:       {"input_len", "output_len", "range_ratio", "prefix_len", "unique_prefixes"},
	SharedPrefix: {"num_groups", "prompts_per_group", "system_prompt_len", "question_len", "output_len", "zipf", "unique_prefixes"},
	MultiTurn:    {"sessions", "turns", "think_time_ms", "history", "input_len", "output_len", "range_ratio", "system_prompt_len"},
	Trace: {"path", "time_scale", "block_size", "ignore_timestamps", "format", "window_start_s", "window_end_s",
		"session_prefix_blocks", "unique_prefixes"},
	ShareGPT: {"path", "output_len", "disable_shuffle"},
	Sonnet:   {"path", "input_len", "output_len", "prefix_len"},
	BurstGPT: {"path"},
	Custom:   {"path", "output_len", "disable_shuffle"},
}

// commonKnobs are the yaml keys every kind accepts.
var commonKnobs = []string{"kind", "ignore_eos", "temperature", "top_p", "top_k", "min_p", "extra_body",
	"tokenizer", "headers", "api_key_env", "request_id_prefix", "max_seconds"}

// Kinds lists the workload kinds.
func Kinds() []string {
	return []string{Random, SharedPrefix, MultiTurn, Trace, ShareGPT, Sonnet, BurstGPT, Custom}
}

// Parse strictly decodes a YAML workload: unknown keys are errors.
func Parse(data []byte) (Workload, error) {
	var w Workload
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		return Workload{}, fmt.Errorf("decoding workload: %w", err)
	}
	return w, w.Validate()
}

// WithDefaults returns w with zero knobs of its kind set to their defaults.
func (w Workload) WithDefaults() Workload {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	switch w.Kind {
	case Random:
		def(&w.InputLen, 1024)
		def(&w.OutputLen, 128)
	case SharedPrefix:
		def(&w.NumGroups, 64)
		def(&w.PromptsPerGroup, 16)
		def(&w.SystemPromptLen, 2048)
		def(&w.QuestionLen, 128)
		def(&w.OutputLen, 256)
	case MultiTurn:
		def(&w.Turns, 4)
		def(&w.InputLen, 128)
		def(&w.OutputLen, 128)
		if w.History == "" {
			w.History = HistoryActual
		}
	case Trace:
		def(&w.BlockSize, 512)
		if w.TimeScale == 0 {
			w.TimeScale = 1
		}
		if w.Format == "" {
			w.Format = FormatAuto
		}
	case Sonnet:
		def(&w.InputLen, 550)
		def(&w.OutputLen, 150)
		def(&w.PrefixLen, 200)
	case Custom:
		def(&w.OutputLen, 256)
	}
	if w.IgnoreEOS == nil {
		t := true
		w.IgnoreEOS = &t
	}
	return w
}

// Validate checks every knob and returns all problems joined, each a
// *field.Error naming the knob by its yaml key.
func (w Workload) Validate() error {
	var l field.Errors
	allowed, ok := knobs[w.Kind]
	if !ok {
		l.Add("kind", "unknown workload kind %q (want %s)", w.Kind, strings.Join(Kinds(), ", "))
	}
	for _, key := range foreignKnobs(w, allowed) {
		if ok {
			l.Add(key, "not a knob of kind %s (it takes %s)", w.Kind, strings.Join(allowed, ", "))
		}
	}
	w = w.WithDefaults()
	finite := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	checks := []struct {
		bad       bool
		path, msg string
	}{
		{w.InputLen < 0, "input_len", fmt.Sprintf("must be > 0, got %d", w.InputLen)},
		{w.OutputLen < 0, "output_len", fmt.Sprintf("must be > 0, got %d", w.OutputLen)},
		{!(w.RangeRatio >= 0 && w.RangeRatio < 1), "range_ratio", fmt.Sprintf("must be in [0, 1), got %v", w.RangeRatio)},
		{w.PrefixLen < 0, "prefix_len", fmt.Sprintf("must be >= 0, got %d", w.PrefixLen)},
		{w.NumGroups < 0, "num_groups", fmt.Sprintf("must be > 0, got %d", w.NumGroups)},
		{w.PromptsPerGroup < 0, "prompts_per_group", fmt.Sprintf("must be > 0, got %d", w.PromptsPerGroup)},
		{w.SystemPromptLen < 0, "system_prompt_len", fmt.Sprintf("must be >= 0, got %d", w.SystemPromptLen)},
		{w.QuestionLen < 0, "question_len", fmt.Sprintf("must be > 0, got %d", w.QuestionLen)},
		{!finite(w.Zipf), "zipf", fmt.Sprintf("must be a finite exponent >= 0 (0 = uniform), got %v", w.Zipf)},
		{w.Sessions < 0, "sessions", fmt.Sprintf("must be >= 0, got %d", w.Sessions)},
		{w.Turns < 0, "turns", fmt.Sprintf("must be > 0, got %d", w.Turns)},
		{!finite(w.ThinkTimeMs), "think_time_ms", fmt.Sprintf("must be >= 0, got %v", w.ThinkTimeMs)},
		{w.Kind == MultiTurn && w.History != HistoryActual && w.History != HistorySynthetic,
			"history", fmt.Sprintf("must be actual or synthetic, got %q", w.History)},
		{needsPath(w.Kind) && w.Path == "", "path", "required for kind " + w.Kind},
		{!finite(w.TimeScale), "time_scale", fmt.Sprintf("must be > 0, got %v", w.TimeScale)},
		{w.BlockSize < 0, "block_size", fmt.Sprintf("must be > 0, got %d", w.BlockSize)},
		{w.Kind == Trace && w.Format != FormatAuto && w.Format != FormatMooncake && w.Format != FormatAzure,
			"format", fmt.Sprintf("must be %s, %s or %s, got %q", FormatAuto, FormatMooncake, FormatAzure, w.Format)},
		{!finite(w.WindowStartS), "window_start_s", fmt.Sprintf("must be >= 0, got %v", w.WindowStartS)},
		{!finite(w.WindowEndS) || w.WindowEndS != 0 && w.WindowEndS <= w.WindowStartS,
			"window_end_s", fmt.Sprintf("must be > window_start_s (%v), or 0 for the trace's end, got %v", w.WindowStartS, w.WindowEndS)},
		{w.SessionPrefixBlocks < 0, "session_prefix_blocks", fmt.Sprintf("must be >= 0, got %d", w.SessionPrefixBlocks)},
		{w.SessionPrefixBlocks > 0 && w.Format == FormatAzure, "session_prefix_blocks", "the azure format has no hash_ids to derive sessions from"},
		{w.UniquePrefixes && w.Kind == Random && w.PrefixLen == 0, "unique_prefixes", "kind random shares no prefix without prefix_len > 0"},
		{w.Kind == Sonnet && w.PrefixLen > w.InputLen, "prefix_len", fmt.Sprintf("must be <= input_len (%d), got %d", w.InputLen, w.PrefixLen)},
		{!finite(w.Temperature), "temperature", fmt.Sprintf("must be >= 0, got %v", w.Temperature)},
		{!(w.TopP >= 0 && w.TopP <= 1), "top_p", fmt.Sprintf("must be in (0, 1] (0 = not sent), got %v", w.TopP)},
		{w.TopK < -1, "top_k", fmt.Sprintf("must be >= -1 (0 = not sent, -1 = all tokens), got %d", w.TopK)},
		{!(w.MinP >= 0 && w.MinP <= 1), "min_p", fmt.Sprintf("must be in [0, 1], got %v", w.MinP)},
		{!finite(w.MaxSeconds), "max_seconds", fmt.Sprintf("must be >= 0 (0 = no bound), got %v", w.MaxSeconds)},
	}
	for _, c := range checks {
		if c.bad {
			l.Add(c.path, "%s", c.msg)
		}
	}
	for _, k := range sortedKeys(w.Headers) {
		if err := CheckHeaderName(k); err != nil {
			l.Add("headers", "%v", err)
		}
		if strings.ContainsAny(w.Headers[k], "\r\n") {
			l.Add("headers", "value of %s holds a line break", k)
		}
		if textproto.CanonicalMIMEHeaderKey(k) == "Authorization" {
			l.Add("headers", "Authorization must not be written in a spec; name the key's environment variable in api_key_env")
		}
	}
	if w.APIKeyEnv != "" && strings.ContainsAny(w.APIKeyEnv, "= \t\r\n") {
		l.Add("api_key_env", "%q is not an environment variable name (write the variable's name, never the key)", w.APIKeyEnv)
	}
	return l.Err()
}

// CheckHeaderName rejects characters that would end a header name early or
// split the header on the wire.
func CheckHeaderName(name string) error {
	if name == "" || strings.ContainsAny(name, " :\t\r\n") {
		return fmt.Errorf("%q: header names cannot be empty or hold spaces, colons or line breaks", name)
	}
	return nil
}

func needsPath(kind string) bool {
	return kind == Trace || kind == ShareGPT || kind == BurstGPT || kind == Custom
}

// foreignKnobs returns the yaml keys of the non-zero fields that kind does
// not use.
func foreignKnobs(w Workload, allowed []string) []string {
	ok := map[string]bool{}
	for _, k := range append(append([]string{}, commonKnobs...), allowed...) {
		ok[k] = true
	}
	var out []string
	v := reflect.ValueOf(w)
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if !ok[key] && !v.Field(i).IsZero() {
			out = append(out, key)
		}
	}
	return out
}
