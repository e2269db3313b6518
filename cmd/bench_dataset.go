package cmd

import (
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
	workload.ShareGPT: {"path": "dataset-path", "output_len": "sharegpt-output-len", "disable_shuffle": "disable-shuffle"},
	workload.Sonnet: {"path": "dataset-path", "input_len": "sonnet-input-len", "output_len": "sonnet-output-len",
		"prefix_len": "sonnet-prefix-len"},
	workload.BurstGPT: {"path": "dataset-path"},
	workload.Custom:   {"path": "dataset-path", "output_len": "custom-output-len", "disable_shuffle": "disable-shuffle"},
}

// commonFlags name the flags of the workload keys every kind takes.
var commonFlags = map[string]string{
	"temperature": "temperature", "top_p": "top-p", "top_k": "top-k", "min_p": "min-p", "extra_body": "extra-body",
	"tokenizer": "tokenizer", "headers": "header", "request_id_prefix": "request-id-prefix", "max_seconds": "max-seconds",
	"ignore_eos": "ignore-eos",
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
		// Flags given on the command line override the file's values.
		if err := f.commonKnobs(&w, false); err != nil {
			return w, err
		}
		if err := w.Validate(); err != nil {
			return w, usageErr("%s", f.flagError(keyed("workload.", err)))
		}
		return w, nil
	}
	own, ok := datasetFlags[f.datasetName]
	if !ok {
		return driver.Workload{}, usageErr("--dataset-name: want %s, got %q", strings.Join(workload.Kinds(), ", "), f.datasetName)
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
	if err := f.commonKnobs(&w, true); err != nil {
		return w, err
	}
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
	case workload.ShareGPT:
		w.Path, w.OutputLen, w.DisableShuffle = f.datasetPath, f.sharegptOutputLen, f.disableShuffle
	case workload.Sonnet:
		w.Path, w.InputLen, w.OutputLen, w.PrefixLen = f.datasetPath, f.sonnetInputLen, f.sonnetOutputLen, f.sonnetPrefixLen
	case workload.BurstGPT:
		w.Path = f.datasetPath
	case workload.Custom:
		w.Path, w.OutputLen, w.DisableShuffle = f.datasetPath, f.customOutputLen, f.disableShuffle
	}
	if err := w.Validate(); err != nil {
		return w, usageErr("%s", f.flagError(keyed("workload.", err)))
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
		"arrival.ramp_up_strategy": "ramp-up-strategy", "arrival.ramp_up_start_rps": "ramp-up-start-rps",
		"arrival.ramp_up_end_rps": "ramp-up-end-rps", "arrival.rates": "rates", "headers": "header", "api_key": "api-key",
		"endpoint": "endpoint", "model": "model", "timeout": "timeout", "goodput": "goodput",
		"percentiles": "metric-percentiles", "session_header": "session-header", "run_id_header": "run-id-header",
	}
	if wk, ok := strings.CutPrefix(key, "workload."); ok {
		if fl, ok := datasetFlags[f.datasetName][wk]; ok && f.workloadFile == "" {
			return "--" + fl + ":" + rest
		}
		if fl, ok := commonFlags[wk]; ok && f.workloadFile == "" {
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
