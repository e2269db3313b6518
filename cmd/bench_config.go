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

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/workload"
)

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
	if err := f.checkSweepFlags(); err != nil {
		return driver.Config{}, err
	}
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
	if f.rampUpStrategy != "" && !f.fs.Changed("request-rate") {
		rate = 0 // the ramp sets the rate
	}
	cfg.Arrival = driver.Arrival{Kind: f.arrival, RequestRate: rate, Burstiness: f.burstiness, MaxConcurrency: f.maxConcurrency,
		RampUpStrategy: f.rampUpStrategy, RampUpStartRPS: f.rampUpStartRPS, RampUpEndRPS: f.rampUpEndRPS}
	if f.profile == ProfileSweep {
		// Each run of the sweep sets its own arrival (runSweep).
		cfg.Arrival = driver.Arrival{MaxConcurrency: f.maxConcurrency, Burstiness: f.burstiness}
	}
	if cfg.Headers, err = parseHeaders(f.headers); err != nil {
		return cfg, err
	}
	cfg.APIKey = f.apiKey
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if !(f.readyCheckTimeoutSec >= 0) {
		return cfg, usageErr("--ready-check-timeout-sec: must be >= 0 (0: no check), got %v", f.readyCheckTimeoutSec)
	}
	cfg.ReadyCheckTimeout = time.Duration(f.readyCheckTimeoutSec * float64(time.Second))
	if f.readyCheckTimeoutSec == 0 {
		cfg.ReadyCheckTimeout = -1
	}
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
	if cfg.Tokenizer, err = workload.LoadTokenizer(cfg.Workload.Tokenizer); err != nil {
		return cfg, usageErr("--tokenizer: %v", err)
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
