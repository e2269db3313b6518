package workload

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Workload kinds.
const (
	Random       = "random"
	SharedPrefix = "shared_prefix"
	MultiTurn    = "multi_turn"
	Trace        = "trace"
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

	// trace.
	Path             string  `yaml:"path,omitempty" json:"path,omitempty"`
	TimeScale        float64 `yaml:"time_scale,omitempty" json:"time_scale,omitempty"`
	BlockSize        int     `yaml:"block_size,omitempty" json:"block_size,omitempty"`
	IgnoreTimestamps bool    `yaml:"ignore_timestamps,omitempty" json:"ignore_timestamps,omitempty"`

	// every kind.
	IgnoreEOS   *bool   `yaml:"ignore_eos,omitempty" json:"ignore_eos,omitempty"`
	Temperature float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
}

// knobs lists the yaml keys each kind accepts besides kind, ignore_eos and temperature.
var knobs = map[string][]string{
	Random:       {"input_len", "output_len", "range_ratio", "prefix_len"},
	SharedPrefix: {"num_groups", "prompts_per_group", "system_prompt_len", "question_len", "output_len", "zipf"},
	MultiTurn:    {"sessions", "turns", "think_time_ms", "history", "input_len", "output_len", "range_ratio", "system_prompt_len"},
	Trace:        {"path", "time_scale", "block_size", "ignore_timestamps"},
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
	}
	if w.IgnoreEOS == nil {
		t := true
		w.IgnoreEOS = &t
	}
	return w
}

// Validate reports the first bad knob by its yaml key.
func (w Workload) Validate() error {
	allowed, ok := knobs[w.Kind]
	if !ok {
		return fmt.Errorf("kind: unknown workload kind %q (want random, shared_prefix, multi_turn or trace)", w.Kind)
	}
	if key := foreignKnob(w, allowed); key != "" {
		return fmt.Errorf("%s: not a knob of kind %s (it takes %s)", key, w.Kind, strings.Join(allowed, ", "))
	}
	w = w.WithDefaults()
	checks := []struct {
		bad bool
		msg string
	}{
		{w.InputLen < 0, fmt.Sprintf("input_len: must be > 0, got %d", w.InputLen)},
		{w.OutputLen < 0, fmt.Sprintf("output_len: must be > 0, got %d", w.OutputLen)},
		{!(w.RangeRatio >= 0 && w.RangeRatio < 1), fmt.Sprintf("range_ratio: must be in [0, 1), got %v", w.RangeRatio)},
		{w.PrefixLen < 0, fmt.Sprintf("prefix_len: must be >= 0, got %d", w.PrefixLen)},
		{w.NumGroups < 0, fmt.Sprintf("num_groups: must be > 0, got %d", w.NumGroups)},
		{w.PromptsPerGroup < 0, fmt.Sprintf("prompts_per_group: must be > 0, got %d", w.PromptsPerGroup)},
		{w.SystemPromptLen < 0, fmt.Sprintf("system_prompt_len: must be >= 0, got %d", w.SystemPromptLen)},
		{w.QuestionLen < 0, fmt.Sprintf("question_len: must be > 0, got %d", w.QuestionLen)},
		{!(w.Zipf >= 0) || math.IsInf(w.Zipf, 0), fmt.Sprintf("zipf: must be a finite exponent >= 0 (0 = uniform), got %v", w.Zipf)},
		{w.Sessions < 0, fmt.Sprintf("sessions: must be >= 0, got %d", w.Sessions)},
		{w.Turns < 0, fmt.Sprintf("turns: must be > 0, got %d", w.Turns)},
		{!(w.ThinkTimeMs >= 0) || math.IsInf(w.ThinkTimeMs, 0), fmt.Sprintf("think_time_ms: must be >= 0, got %v", w.ThinkTimeMs)},
		{w.Kind == MultiTurn && w.History != HistoryActual && w.History != HistorySynthetic,
			fmt.Sprintf("history: must be actual or synthetic, got %q", w.History)},
		{w.Kind == Trace && w.Path == "", "path: required for kind trace"},
		{!(w.TimeScale >= 0) || math.IsInf(w.TimeScale, 0), fmt.Sprintf("time_scale: must be > 0, got %v", w.TimeScale)},
		{w.BlockSize < 0, fmt.Sprintf("block_size: must be > 0, got %d", w.BlockSize)},
		{!(w.Temperature >= 0) || math.IsInf(w.Temperature, 0), fmt.Sprintf("temperature: must be >= 0, got %v", w.Temperature)},
	}
	for _, c := range checks {
		if c.bad {
			return fmt.Errorf("%s", c.msg)
		}
	}
	return nil
}

// foreignKnob returns the yaml key of the first non-zero field that kind
// does not use, or "".
func foreignKnob(w Workload, allowed []string) string {
	common := map[string]bool{"kind": true, "ignore_eos": true, "temperature": true}
	for _, k := range allowed {
		common[k] = true
	}
	v := reflect.ValueOf(w)
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if !common[key] && !v.Field(i).IsZero() {
			return key
		}
	}
	return ""
}
