package sim

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket boundaries follow vLLM's, with sub-10 ms buckets added because
// simulated steps can be that short.
var (
	ttftBuckets    = []float64{0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	tokenBuckets   = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	requestBuckets = []float64{0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	countBuckets   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}
	finishReasons  = []string{"stop", "length", "abort"}
)

// metrics is one server's Prometheus registry. Every series carries
// model_name and engine (the data-parallel rank), as vLLM's do.
type metrics struct {
	reg   *prometheus.Registry
	ranks []*rankMetrics
}

// rankMetrics are one rank's series, bound once so the engine loop only
// does atomic adds. The fields are the few methods the engine calls, so a
// fleet's engines (virtual time, never scraped) can discard them.
type rankMetrics struct {
	running, waiting, kvUsage, kvHeld                                 gauge
	prefixHits, prefixQueries, promptTokens, genTokens, preemptions   counter
	kvPullsOK, kvPullsFailed, kvHoldExpired                           counter
	success                                                           map[string]counter
	ttft, tpot, itl, e2e, queue, prefill, decode, promptHist, genHist prometheus.Observer
	kvTransfer                                                        prometheus.Observer
	// kvUsageStep is the KV usage during each step: a peak over any window
	// is read from its bucket counts exactly to the bucket width, which a
	// scraped gauge cannot give.
	kvUsageStep prometheus.Observer
	// CPU tier (KVOffload): vLLM's connector counters, and the tier's own.
	externalHits, externalQueries, offloadStored, offloadLoaded, offloadLoadSeconds counter
	offloadUsage                                                                    gauge
	// Step lag: how far steps end behind their modelled end on the real
	// clock (a loaded host's timers fire late), and the modelled busy time
	// to hold it against. Written by the engine loop only.
	lagTotal, busyTotal counter
	lagMax              gauge
	worstLag            time.Duration
}

type gauge interface{ Set(float64) }

type counter interface {
	Inc()
	Add(float64)
}

// discardMetrics are rank metrics that record nothing: a fleet's engines
// report to their observer instead, and nobody scrapes them.
func discardMetrics() *rankMetrics {
	var d discard
	m := &rankMetrics{running: d, waiting: d, kvUsage: d, kvHeld: d, prefixHits: d, prefixQueries: d, promptTokens: d,
		genTokens: d, preemptions: d, kvPullsOK: d, kvPullsFailed: d, kvHoldExpired: d, success: map[string]counter{},
		ttft: d, tpot: d, itl: d, e2e: d, queue: d, prefill: d, decode: d, promptHist: d, genHist: d, kvTransfer: d,
		kvUsageStep: d, externalHits: d, externalQueries: d, offloadStored: d, offloadLoaded: d, offloadLoadSeconds: d,
		offloadUsage: d, lagTotal: d, busyTotal: d, lagMax: d}
	for _, fr := range finishReasons {
		m.success[fr] = d
	}
	return m
}

type discard struct{}

func (discard) Set(float64)     {}
func (discard) Inc()            {}
func (discard) Add(float64)     {}
func (discard) Observe(float64) {}

func newMetrics(cfg *config) *metrics {
	reg := prometheus.NewRegistry()
	labels := []string{"model_name", "engine"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	counterVec := func(name, help string, extra ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(labels[:2:2], extra...))
		reg.MustRegister(v)
		return v
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v
	}
	running := gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	waiting := gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed (including KV pulls in progress).")
	kvUsage := gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
	kvHeld := gauge("vllm:kv_transfer_held_requests", "Requests whose KV a prefill engine holds for a decode engine to pull.")
	hits := counterVec("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.")
	queries := counterVec("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.")
	prompt := counterVec("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	gen := counterVec("vllm:generation_tokens_total", "Number of generation tokens processed.")
	preempt := counterVec("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.")
	pulls := counterVec("vllm:kv_transfer_pulls_total", "KV pulls by a decode engine from a prefill engine, by result (ok, failed).", "result")
	expired := counterVec("vllm:kv_transfer_hold_expired_total", "Held KV released because no decode engine pulled it in time.")
	success := counterVec("vllm:request_success_total", "Count of successfully processed requests.", "finish_reason")
	ttft := hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	tpot := hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds (per request mean).", tokenBuckets)
	itl := hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", tokenBuckets)
	e2e := hist("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", requestBuckets)
	queue := hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestBuckets)
	prefill := hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestBuckets)
	decode := hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestBuckets)
	promptHist := hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", countBuckets)
	genHist := hist("vllm:request_generation_tokens", "Number of generation tokens processed.", countBuckets)
	usageStep := hist("autoinfer:sim_kv_usage_step_perc", "KV-cache usage during each engine step (after its admissions); 1 means 100 percent usage.", usageBuckets())
	transfer := hist("vllm:kv_transfer_time_seconds", "Histogram of KV pull time in seconds (modelled transfer included).", ttftBuckets)
	lagTotal := counterVec("autoinfer:sim_step_lag_seconds_total", "Total time engine steps ended after their modelled end on the real clock.")
	lagMax := gauge("autoinfer:sim_step_lag_max_seconds", "Largest lag of a single engine step behind its modelled end.")
	busy := counterVec("autoinfer:sim_modelled_busy_seconds_total", "Total modelled duration of the engine's steps.")
	extHits := counterVec("vllm:external_prefix_cache_hits_total", "External prefix cache hits from KV connector cross-instance cache sharing (here: the CPU tier), in tokens.")
	extQueries := counterVec("vllm:external_prefix_cache_queries_total", "External prefix cache queries from KV connector cross-instance cache sharing (here: the CPU tier), in tokens.")
	stored := counterVec("autoinfer:sim_kv_offload_stored_blocks_total", "Blocks the GPU prefix cache evicted into the CPU tier.")
	loaded := counterVec("autoinfer:sim_kv_offload_loaded_blocks_total", "Blocks loaded from the CPU tier back to the GPU on a prefix hit.")
	loadSecs := counterVec("autoinfer:sim_kv_offload_load_seconds_total", "Modelled time of CPU-tier loads, added to the steps that used them.")
	offUsage := gauge("autoinfer:sim_kv_offload_usage_perc", "CPU tier usage. 1 means 100 percent usage.")

	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig."},
		[]string{"model_name", "engine", "block_size", "num_gpu_blocks", "enable_prefix_caching"})
	reg.MustRegister(info)

	m := &metrics{reg: reg}
	for r := range cfg.ranks {
		l := prometheus.Labels{"model_name": cfg.model, "engine": strconv.Itoa(r)}
		rm := &rankMetrics{
			running: running.With(l), waiting: waiting.With(l), kvUsage: kvUsage.With(l), kvHeld: kvHeld.With(l),
			prefixHits: hits.With(l), prefixQueries: queries.With(l), promptTokens: prompt.With(l),
			genTokens: gen.With(l), preemptions: preempt.With(l), kvHoldExpired: expired.With(l),
			kvPullsOK:     pulls.MustCurryWith(l).WithLabelValues("ok"),
			kvPullsFailed: pulls.MustCurryWith(l).WithLabelValues("failed"),
			success:       map[string]counter{},
			ttft:          ttft.With(l), tpot: tpot.With(l), itl: itl.With(l), e2e: e2e.With(l), queue: queue.With(l),
			prefill: prefill.With(l), decode: decode.With(l), promptHist: promptHist.With(l), genHist: genHist.With(l),
			kvTransfer: transfer.With(l), kvUsageStep: usageStep.With(l),
			lagTotal: lagTotal.With(l), lagMax: lagMax.With(l), busyTotal: busy.With(l),
			externalHits: extHits.With(l), externalQueries: extQueries.With(l), offloadStored: stored.With(l),
			offloadLoaded: loaded.With(l), offloadLoadSeconds: loadSecs.With(l), offloadUsage: offUsage.With(l),
		}
		for _, fr := range finishReasons {
			rm.success[fr] = success.MustCurryWith(l).WithLabelValues(fr)
		}
		info.WithLabelValues(cfg.model, strconv.Itoa(r), strconv.Itoa(cfg.blockSize), strconv.Itoa(cfg.numBlocks),
			strconv.FormatBool(cfg.prefixCache)).Set(1)
		m.ranks = append(m.ranks, rm)
	}
	return m
}

// usageBuckets are 0.05, 0.10, …, 1: a window's peak KV usage to within
// 5 points.
func usageBuckets() []float64 {
	out := make([]float64, 20)
	for i := range out {
		out[i] = float64(i+1) / 20
	}
	return out
}

// stepLag records a step of modelled length dur that ended lag after its
// modelled end (0 or less: on time).
func (m *rankMetrics) stepLag(dur, lag time.Duration) {
	m.busyTotal.Add(dur.Seconds())
	if lag <= 0 {
		return
	}
	m.lagTotal.Add(lag.Seconds())
	if lag > m.worstLag {
		m.worstLag = lag
		m.lagMax.Set(lag.Seconds())
	}
}

// admitted records a request's first admission and its prefix-cache result.
func (m *rankMetrics) admitted(s *seq, cachedTokens int) {
	m.prefixQueries.Add(float64(s.promptLen))
	m.prefixHits.Add(float64(cachedTokens))
	m.promptTokens.Add(float64(s.promptLen))
	m.queue.Observe(s.scheduled.Sub(s.arrival).Seconds())
}

// offloaded records blocks loaded from the CPU tier and their load time.
func (m *rankMetrics) offloaded(blocks int, d time.Duration) {
	m.offloadLoaded.Add(float64(blocks))
	m.offloadLoadSeconds.Add(d.Seconds())
}

// token records one generated token of s at now.
func (m *rankMetrics) token(s *seq, now time.Time) {
	m.genTokens.Inc()
	if s.firstTok.IsZero() {
		s.firstTok = now
		m.ttft.Observe(now.Sub(s.arrival).Seconds())
		m.prefill.Observe(now.Sub(s.scheduled).Seconds())
	} else {
		m.itl.Observe(now.Sub(s.lastTok).Seconds())
	}
	s.lastTok = now
}

// finished records the end of s after g tokens.
func (m *rankMetrics) finished(s *seq, reason string, g int, now time.Time) {
	if c, ok := m.success[reason]; ok {
		c.Inc()
	}
	m.e2e.Observe(now.Sub(s.arrival).Seconds())
	m.promptHist.Observe(float64(s.promptLen))
	m.genHist.Observe(float64(g))
	if !s.firstTok.IsZero() {
		m.decode.Observe(now.Sub(s.firstTok).Seconds())
		if g > 1 {
			m.tpot.Observe(now.Sub(s.firstTok).Seconds() / float64(g-1))
		}
	}
}
