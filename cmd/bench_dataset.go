package cmd

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// datasetFlags names each dataset's flags, by the workload key they set.
var datasetFlags = map[string]map[string]string{
	workload.Random: {"input_len": "random-input-len", "output_len": "random-output-len",
		"range_ratio": "random-range-ratio", "prefix_len": "random-prefix-len"},
	workload.SharedPrefix: {"num_groups": "gsp-num-groups", "prompts_per_group": "gsp-prompts-per-group",
		"system_prompt_len": "gsp-system-prompt-len", "question_len": "gsp-question-len", "output_len": "gsp-output-len", "zipf": "gsp-zipf"},
	workload.MultiTurn: {"sessions": "multi-turn-sessions", "turns": "multi-turn-turns", "input_len": "multi-turn-input-len",
		"output_len": "multi-turn-output-len", "system_prompt_len": "multi-turn-system-prompt-len",
		"think_time_ms": "multi-turn-think-time-ms", "history": "multi-turn-history"},
	workload.Trace: {"path": "dataset-path", "time_scale": "trace-time-scale", "block_size": "trace-block-size",
		"ignore_timestamps": "trace-ignore-timestamps"},
}

// workload builds the Workload from --workload-file or the dataset flags,
// refusing flags of another dataset.
func (f *benchFlags) workload() (driver.Workload, error) {
	if f.workloadFile != "" {
		data, err := os.ReadFile(f.workloadFile)
		if err != nil {
			return driver.Workload{}, usageErr("--workload-file: %v", err)
		}
		w, err := workload.Parse(data)
		if err != nil {
			return w, usageErr("--workload-file: %s: %v", f.workloadFile, err)
		}
		return w, nil
	}
	own, ok := datasetFlags[f.datasetName]
	if !ok {
		return driver.Workload{}, usageErr("--dataset-name: want random, shared_prefix, multi_turn or trace, got %q", f.datasetName)
	}
	for name, flags := range datasetFlags {
		for _, flag := range flags {
			if name != f.datasetName && f.fs.Changed(flag) && !slices.Contains(values(own), flag) {
				return driver.Workload{}, usageErr("--%s: applies to --dataset-name %s, not %s", flag, name, f.datasetName)
			}
		}
	}
	ignoreEOS := f.ignoreEOS
	w := driver.Workload{Kind: f.datasetName, IgnoreEOS: &ignoreEOS, Temperature: f.temperature}
	switch f.datasetName {
	case workload.Random:
		w.InputLen, w.OutputLen, w.RangeRatio, w.PrefixLen = f.randomInputLen, f.randomOutputLen, f.randomRangeRatio, f.randomPrefixLen
	case workload.SharedPrefix:
		w.NumGroups, w.PromptsPerGroup, w.SystemPromptLen = f.gspNumGroups, f.gspPromptsPerGroup, f.gspSystemPromptLen
		w.QuestionLen, w.OutputLen, w.Zipf = f.gspQuestionLen, f.gspOutputLen, f.gspZipf
	case workload.MultiTurn:
		w.Sessions, w.Turns, w.InputLen, w.OutputLen = f.mtSessions, f.mtTurns, f.mtInputLen, f.mtOutputLen
		w.SystemPromptLen, w.ThinkTimeMs, w.History = f.mtSystemPromptLen, f.mtThinkTimeMs, f.mtHistory
	case workload.Trace:
		w.Path, w.TimeScale, w.BlockSize, w.IgnoreTimestamps = f.datasetPath, f.traceTimeScale, f.traceBlockSize, f.traceIgnoreTimestamps
	}
	if err := w.Validate(); err != nil {
		return w, usageErr("%s", f.flagError(fmt.Errorf("workload.%w", err)))
	}
	return w, nil
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// flagError rewrites each problem of a driver error (one per joined
// error) so that its leading key (workload.input_len, arrival.request_rate,
// num_prompts, …) becomes the flag that sets it.
func (f *benchFlags) flagError(err error) string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range j.Unwrap() {
			lines = append(lines, f.flagError(e))
		}
		return strings.Join(lines, "\n")
	}
	return f.flagLine(err)
}

// flagLine rewrites one problem's key as its flag.
func (f *benchFlags) flagLine(err error) string {
	msg := err.Error()
	key, rest, ok := strings.Cut(msg, ":")
	if !ok {
		return msg
	}
	flags := map[string]string{
		"arrival.request_rate": "request-rate", "arrival.burstiness": "burstiness", "arrival.kind": "arrival",
		"arrival.max_concurrency": "max-concurrency", "num_prompts": "num-prompts", "base_url": "base-url",
		"endpoint": "endpoint", "model": "model", "timeout": "timeout", "goodput": "goodput",
		"percentiles": "metric-percentiles", "session_header": "session-header", "run_id_header": "run-id-header",
	}
	if wk, ok := strings.CutPrefix(key, "workload."); ok {
		if fl, ok := datasetFlags[f.datasetName][wk]; ok && f.workloadFile == "" {
			return "--" + fl + ":" + rest
		}
		if f.workloadFile != "" {
			return "--workload-file: " + msg
		}
	}
	if fl, ok := flags[key]; ok {
		return "--" + fl + ":" + rest
	}
	return msg
}
