package cmd

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/driver"
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

	sharegptOutputLen, customOutputLen               int
	sonnetInputLen, sonnetOutputLen, sonnetPrefixLen int
	disableShuffle                                   bool
	tokenizer                                        string
	apiKey                                           string
	headers, metadata                                []string
	readyCheckTimeoutSec                             float64
	rampUpStrategy                                   string
	rampUpStartRPS, rampUpEndRPS, maxSeconds         float64
	extraBody, requestIDPrefix                       string
	topP, minP                                       float64
	topK                                             int
	appendResult                                     bool
	profile                                          string
	rates                                            int
	kneeAttainment                                   float64

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
	fs.StringVar(&f.datasetName, "dataset-name", workload.Random, "random, shared_prefix, multi_turn, trace, sharegpt, sonnet, burstgpt or custom")
	fs.StringVar(&f.datasetPath, "dataset-path", "", "dataset file: trace (JSON Lines), sharegpt (JSON), burstgpt (CSV), custom (JSON Lines), sonnet (text; default: the shipped sonnets)")
	fs.IntVar(&f.sharegptOutputLen, "sharegpt-output-len", 0, "sharegpt: output tokens of every request (0: each conversation's reply length)")
	fs.IntVar(&f.sonnetInputLen, "sonnet-input-len", 550, "sonnet: upper bound of prompt tokens")
	fs.IntVar(&f.sonnetOutputLen, "sonnet-output-len", 150, "sonnet: output tokens")
	fs.IntVar(&f.sonnetPrefixLen, "sonnet-prefix-len", 200, "sonnet: tokens of the prefix every prompt shares")
	fs.IntVar(&f.customOutputLen, "custom-output-len", 256, "custom: output tokens of lines without output_tokens")
	fs.BoolVar(&f.disableShuffle, "disable-shuffle", false, "sharegpt, custom: keep the file's order instead of a seeded shuffle")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "Hugging Face tokenizer.json (file, directory or cached model name) prompts are generated and counted with (default: autoinfer/sim)")
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
	fs.StringVar(&f.rampUpStrategy, "ramp-up-strategy", "", "linear or exponential: the rate grows from --ramp-up-start-rps to --ramp-up-end-rps over the requests")
	fs.Float64Var(&f.rampUpStartRPS, "ramp-up-start-rps", 0, "ramp-up: rate of the first request")
	fs.Float64Var(&f.rampUpEndRPS, "ramp-up-end-rps", 0, "ramp-up: rate of the last request")
	fs.Float64Var(&f.maxSeconds, "max-seconds", 0, "stop the measured run after this many seconds (unsent requests: not_sent; in flight: incomplete)")
	fs.StringVar(&f.profile, "profile", "", "sweep: a synchronous run, a max-throughput run, then --rates constant rates between; prints the knee")
	fs.IntVar(&f.rates, "rates", 0, "sweep: rates between the synchronous and max-throughput runs (default 5)")
	fs.Float64Var(&f.kneeAttainment, "knee-attainment", 0.9, "sweep: share of requests that must meet every --goodput SLO for a rate to count")

	fs.Int64Var(&f.seed, "seed", 0, "seed of prompts and arrivals")
	fs.StringVar(&f.trialID, "trial-id", "bench", "trial id: seeds the stream with --seed and names sessions")
	fs.StringVar(&f.runID, "run-id", "", "value of the run-id header (default: the trial id)")
	fs.StringVar(&f.sessionHeader, "session-header", driver.DefaultSessionHeader, "session header name (- for none)")
	fs.StringVar(&f.sessionScheme, "session-scheme", driver.DefaultSessionScheme, "session header value: {trial_id} {session} {index} {turn}")
	fs.StringVar(&f.runIDHeader, "run-id-header", driver.DefaultRunIDHeader, "run-id header name (- for none)")
	fs.StringSliceVar(&f.goodput, "goodput", nil, "SLOs as ttft:MS, tpot:MS, e2el:MS (comma or space separated)")
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl", "metrics printed with percentiles: ttft, tpot, itl, e2el (the result saves all four)")
	fs.StringVar(&f.metricPercentiles, "metric-percentiles", "99", "percentiles printed, comma separated (the result always saves p50/p90/p99, and these too)")
	fs.IntVar(&f.numWarmups, "num-warmups", driver.DefaultWarmupRequests, "warm-up requests before the measured run (0: none)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", true, "ask the server to ignore EOS so output lengths are exact")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature")
	fs.Float64Var(&f.topP, "top-p", 0, "top_p sent with every request (0: not sent)")
	fs.IntVar(&f.topK, "top-k", 0, "top_k sent with every request (0: not sent, -1: all tokens)")
	fs.Float64Var(&f.minP, "min-p", 0, "min_p sent with every request (0: not sent)")
	fs.StringVar(&f.extraBody, "extra-body", "", "JSON object merged into every request body (its keys win)")
	fs.StringVar(&f.apiKey, "api-key", "", "bearer key (default: $OPENAI_API_KEY); never written to any output")
	fs.StringArrayVar(&f.headers, "header", nil, "extra request header KEY:VALUE (or KEY=VALUE), repeatable")
	fs.StringVar(&f.requestIDPrefix, "request-id-prefix", "", "send X-Request-Id: PREFIX{index} with every request")
	fs.Float64Var(&f.readyCheckTimeoutSec, "ready-check-timeout-sec", 600, "before the warm-up, one request must succeed within this many seconds (0: no check); a 4xx ends the run at once")
	fs.DurationVar(&f.timeout, "timeout", driver.DefaultTimeout, "per-request timeout")

	fs.BoolVar(&f.saveResult, "save-result", false, "save the result JSON")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "save the result with per-request arrays (input_lens, output_lens, ttfts, itls, generated_texts, errors)")
	fs.StringVar(&f.resultDir, "result-dir", "", "directory of the result file (default .)")
	fs.StringVar(&f.resultFilename, "result-filename", "", "result file name (default LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json)")
	fs.StringVar(&f.label, "label", "", "label in the result and its file name (default: the backend)")
	fs.StringVar(&f.exportTo, "export-requests", "", "write every measured request's record to this JSON Lines file")
	fs.StringArrayVar(&f.metadata, "metadata", nil, "KEY=VALUE added to the result JSON, repeatable")
	fs.BoolVar(&f.appendResult, "append-result", false, "append the result to the result file (one JSON object per line) instead of replacing it")
	fs.BoolVar(&f.disableTqdm, "disable-tqdm", false, "no progress bar (plain progress lines instead)")
}
