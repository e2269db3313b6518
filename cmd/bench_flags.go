package cmd

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// benchFlags are bench's flags, named as in vllm bench serve where the
// concept exists there.
type benchFlags struct {
	fs *pflag.FlagSet

	baseURL, host, endpoint, backend, model string
	port                                    int
	datasetName, datasetPath, workloadFile  string
	numPrompts                              int

	randomInputLen, randomOutputLen, randomPrefixLen int
	randomRangeRatio                                 float64

	gspNumGroups, gspPromptsPerGroup, gspSystemPromptLen, gspQuestionLen, gspOutputLen int
	gspZipf                                                                            float64

	mtSessions, mtTurns, mtInputLen, mtOutputLen, mtSystemPromptLen int
	mtThinkTimeMs                                                   float64
	mtHistory                                                       string

	traceTimeScale        float64
	traceBlockSize        int
	traceIgnoreTimestamps bool

	requestRate, arrival string
	burstiness           float64
	maxConcurrency       int

	seed                                                      int64
	trialID, runID, sessionHeader, sessionScheme, runIDHeader string
	goodput                                                   []string
	percentileMetrics, metricPercentiles                      string
	numWarmups                                                int
	ignoreEOS                                                 bool
	temperature                                               float64
	timeout                                                   time.Duration

	saveResult, saveDetailed, disableTqdm      bool
	resultDir, resultFilename, label, exportTo string
}

func (f *benchFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.fs = fs
	fs.StringVar(&f.baseURL, "base-url", "", "server base URL (default http://HOST:PORT)")
	fs.StringVar(&f.host, "host", "127.0.0.1", "server host when --base-url is not given")
	fs.IntVar(&f.port, "port", 8000, "server port when --base-url is not given")
	fs.StringVar(&f.endpoint, "endpoint", "", "API path (default /v1/completions for openai, /v1/chat/completions for openai-chat)")
	fs.StringVar(&f.backend, "backend", "openai", "openai (completions) or openai-chat")
	fs.StringVar(&f.model, "model", "", "model name (default: the first of GET /v1/models)")
	fs.StringVar(&f.datasetName, "dataset-name", workload.Random, "random, shared_prefix, multi_turn or trace")
	fs.StringVar(&f.datasetPath, "dataset-path", "", "trace file (JSON Lines) for --dataset-name trace")
	fs.StringVar(&f.workloadFile, "workload-file", "", "YAML workload (docs/workloads.md) instead of the dataset flags")
	fs.IntVar(&f.numPrompts, "num-prompts", 1000, "measured requests (0: the workload's own count)")

	fs.IntVar(&f.randomInputLen, "random-input-len", 1024, "random: input tokens")
	fs.IntVar(&f.randomOutputLen, "random-output-len", 128, "random: output tokens")
	fs.Float64Var(&f.randomRangeRatio, "random-range-ratio", 0, "random: lengths uniform in [L(1-r), L(1+r)]")
	fs.IntVar(&f.randomPrefixLen, "random-prefix-len", 0, "random: tokens of a prefix shared by every prompt")

	fs.IntVar(&f.gspNumGroups, "gsp-num-groups", 64, "shared_prefix: groups (one system prompt each)")
	fs.IntVar(&f.gspPromptsPerGroup, "gsp-prompts-per-group", 16, "shared_prefix: questions per group")
	fs.IntVar(&f.gspSystemPromptLen, "gsp-system-prompt-len", 2048, "shared_prefix: system prompt tokens")
	fs.IntVar(&f.gspQuestionLen, "gsp-question-len", 128, "shared_prefix: question tokens")
	fs.IntVar(&f.gspOutputLen, "gsp-output-len", 256, "shared_prefix: output tokens")
	fs.Float64Var(&f.gspZipf, "gsp-zipf", 0, "shared_prefix: Zipf exponent of group popularity (0: every pair once per pass)")

	fs.IntVar(&f.mtSessions, "multi-turn-sessions", 0, "multi_turn: sessions (default: num-prompts / turns)")
	fs.IntVar(&f.mtTurns, "multi-turn-turns", 4, "multi_turn: turns per session")
	fs.IntVar(&f.mtInputLen, "multi-turn-input-len", 128, "multi_turn: tokens per user turn")
	fs.IntVar(&f.mtOutputLen, "multi-turn-output-len", 128, "multi_turn: output tokens per turn")
	fs.IntVar(&f.mtSystemPromptLen, "multi-turn-system-prompt-len", 0, "multi_turn: system prompt tokens per session")
	fs.Float64Var(&f.mtThinkTimeMs, "multi-turn-think-time-ms", 0, "multi_turn: pause between an answer and the next turn")
	fs.StringVar(&f.mtHistory, "multi-turn-history", workload.HistoryActual, "multi_turn: actual (server answers) or synthetic (seeded answers)")

	fs.Float64Var(&f.traceTimeScale, "trace-time-scale", 1, "trace: divide timestamps by this (2 = twice as fast)")
	fs.IntVar(&f.traceBlockSize, "trace-block-size", 512, "trace: tokens per hash_ids block")
	fs.BoolVar(&f.traceIgnoreTimestamps, "trace-ignore-timestamps", false, "trace: use the arrival flags instead of the timestamps")

	fs.StringVar(&f.requestRate, "request-rate", "inf", "requests per second, or inf (all at once)")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "gamma shape of the gaps: 1 = Poisson, < 1 burstier, > 1 more even")
	fs.StringVar(&f.arrival, "arrival", "", "gamma (default with a rate), poisson, constant, inf or closed_loop")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "cap on requests in flight (closed_loop: the concurrency)")

	fs.Int64Var(&f.seed, "seed", 0, "seed of prompts and arrivals")
	fs.StringVar(&f.trialID, "trial-id", "bench", "trial id: seeds the stream with --seed and names sessions")
	fs.StringVar(&f.runID, "run-id", "", "value of the run-id header (default: the trial id)")
	fs.StringVar(&f.sessionHeader, "session-header", driver.DefaultSessionHeader, "session header name (- for none)")
	fs.StringVar(&f.sessionScheme, "session-scheme", driver.DefaultSessionScheme, "session header value: {trial_id} {session} {index} {turn}")
	fs.StringVar(&f.runIDHeader, "run-id-header", driver.DefaultRunIDHeader, "run-id header name (- for none)")
	fs.StringSliceVar(&f.goodput, "goodput", nil, "SLOs as ttft:MS, tpot:MS, e2el:MS (comma or space separated)")
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl", "metrics printed with percentiles: ttft, tpot, itl, e2el")
	fs.StringVar(&f.metricPercentiles, "metric-percentiles", "99", "percentiles printed and saved besides p50/p90/p99, comma separated")
	fs.IntVar(&f.numWarmups, "num-warmups", driver.DefaultWarmupRequests, "warm-up requests before the measured run (0: none)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", true, "ask the server to ignore EOS so output lengths are exact")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature")
	fs.DurationVar(&f.timeout, "timeout", driver.DefaultTimeout, "per-request timeout")

	fs.BoolVar(&f.saveResult, "save-result", false, "save the result JSON")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "add per-request arrays (input_lens, ttfts, itls, generated_texts, errors) to the result")
	fs.StringVar(&f.resultDir, "result-dir", "", "directory of the result file (default .)")
	fs.StringVar(&f.resultFilename, "result-filename", "", "result file name (default LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json)")
	fs.StringVar(&f.label, "label", "", "label in the result and its file name (default: the backend)")
	fs.StringVar(&f.exportTo, "export-requests", "", "write every measured request's record to this JSON Lines file")
	fs.BoolVar(&f.disableTqdm, "disable-tqdm", false, "no progress bar (plain progress lines instead)")
}

var goodputArg = regexp.MustCompile(`^(ttft|tpot|e2el):`)

// goodputArgs accepts the positional `ttft:MS tpot:MS` values that follow
// --goodput in vllm's space-separated syntax.
func (f *benchFlags) goodputArgs(args []string) error {
	for _, a := range args {
		if !goodputArg.MatchString(a) {
			return usageErr("unexpected argument %q (bench takes flags; only --goodput values may stand alone)", a)
		}
		f.goodput = append(f.goodput, a)
	}
	return nil
}

// config turns the flags into a driver config; errors name the flag.
func (f *benchFlags) config() (driver.Config, error) {
	cfg := driver.Config{
		BaseURL: f.baseURL, Model: f.model, NumPrompts: f.numPrompts, Seed: f.seed, TrialID: f.trialID, RunID: f.runID,
		SessionHeader: f.sessionHeader, SessionScheme: f.sessionScheme, RunIDHeader: f.runIDHeader,
		Timeout: f.timeout, KeepText: f.saveDetailed, Label: f.label,
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = fmt.Sprintf("http://%s:%d", f.host, f.port)
	}
	switch f.backend {
	case "openai":
		cfg.Endpoint, cfg.Backend = driver.CompletionsEndpoint, "openai"
	case "openai-chat":
		cfg.Endpoint, cfg.Backend = driver.ChatEndpoint, "openai-chat"
	default:
		return cfg, usageErr("--backend: want openai or openai-chat, got %q", f.backend)
	}
	if f.endpoint != "" {
		cfg.Endpoint = f.endpoint
	}
	if f.numWarmups < 0 {
		return cfg, usageErr("--num-warmups: must be >= 0, got %d", f.numWarmups)
	}
	cfg.WarmupRequests = f.numWarmups
	if f.numWarmups == 0 {
		cfg.WarmupRequests = -1
	}
	if f.timeout <= 0 {
		return cfg, usageErr("--timeout: must be > 0, got %v", f.timeout)
	}
	rate, err := parseRate(f.requestRate)
	if err != nil {
		return cfg, err
	}
	cfg.Arrival = driver.Arrival{Kind: f.arrival, RequestRate: rate, Burstiness: f.burstiness, MaxConcurrency: f.maxConcurrency}
	if cfg.Arrival.Burstiness <= 0 {
		return cfg, usageErr("--burstiness: must be > 0, got %v", f.burstiness)
	}
	if cfg.Goodput, err = parseGoodput(f.goodput); err != nil {
		return cfg, err
	}
	if cfg.Percentiles, err = parsePercentiles(f.metricPercentiles); err != nil {
		return cfg, err
	}
	if err := checkMetrics(f.percentileMetrics); err != nil {
		return cfg, err
	}
	if cfg.Workload, err = f.workload(); err != nil {
		return cfg, err
	}
	// Check everything but the model before asking the server for one.
	check := cfg
	if check.Model == "" {
		check.Model = "unset"
	}
	if err := check.Validate(); err != nil {
		return cfg, usageErr("%s", f.flagError(err))
	}
	return cfg, nil
}

func parseRate(s string) (float64, error) {
	if strings.EqualFold(s, "inf") {
		return math.Inf(1), nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || math.IsNaN(r) {
		return 0, usageErr("--request-rate: want a number > 0 or inf, got %q", s)
	}
	return r, nil
}

func parseGoodput(items []string) (driver.SLO, error) {
	var slo driver.SLO
	for _, item := range items {
		for _, kv := range strings.Fields(strings.ReplaceAll(item, ",", " ")) {
			k, v, ok := strings.Cut(kv, ":")
			ms, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || ms <= 0 {
				return slo, usageErr("--goodput: want METRIC:MS with MS > 0, got %q", kv)
			}
			switch k {
			case "ttft":
				slo.TTFTMs = ms
			case "tpot":
				slo.TPOTMs = ms
			case "e2el":
				slo.E2ELMs = ms
			default:
				return slo, usageErr("--goodput: unknown metric %q (want ttft, tpot or e2el)", k)
			}
		}
	}
	return slo, nil
}

func parsePercentiles(s string) ([]float64, error) {
	var ps []float64
	for _, part := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || p < 0 || p > 100 {
			return nil, usageErr("--metric-percentiles: want numbers in [0, 100], got %q", part)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func checkMetrics(s string) error {
	for _, m := range strings.Split(s, ",") {
		if !slices.Contains(metrics.Metrics, strings.TrimSpace(m)) {
			return usageErr("--percentile-metrics: unknown metric %q (want ttft, tpot, itl, e2el)", m)
		}
	}
	return nil
}

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

// flagError rewrites a driver error's leading key (workload.input_len,
// arrival.request_rate, num_prompts, …) as the flag that sets it.
func (f *benchFlags) flagError(err error) string {
	msg := err.Error()
	key, rest, ok := strings.Cut(msg, ":")
	if !ok {
		return msg
	}
	flags := map[string]string{
		"arrival.request_rate": "request-rate", "arrival.burstiness": "burstiness", "arrival.kind": "arrival",
		"arrival.max_concurrency": "max-concurrency", "num_prompts": "num-prompts", "base_url": "base-url",
		"endpoint": "endpoint", "model": "model", "timeout": "timeout", "goodput": "goodput",
		"percentiles": "metric-percentiles", "session_header": "session-header",
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
