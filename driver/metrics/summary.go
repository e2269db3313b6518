package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Rate is a request rate that marshals +Inf as "inf", like vllm's result.
type Rate float64

// MarshalJSON writes "inf" for +Inf and the number otherwise.
func (r Rate) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(r))
}

// UnmarshalJSON accepts a number or "inf".
func (r *Rate) UnmarshalJSON(b []byte) error {
	if string(b) == `"inf"` {
		*r = Rate(math.Inf(1))
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("request_rate: %w", err)
	}
	*r = Rate(f)
	return nil
}

// Summary is the result of one measured run. Its JSON keys are vllm bench
// serve's result keys, then autoinfer's own; the ledger stores each as a
// column of the same name, so they are stable. docs/metrics.md defines each.
type Summary struct {
	Date           string  `json:"date"`
	EndpointType   string  `json:"endpoint_type"`
	Backend        string  `json:"backend"`
	Label          string  `json:"label"`
	ModelID        string  `json:"model_id"`
	TokenizerID    string  `json:"tokenizer_id"`
	NumPrompts     int     `json:"num_prompts"`
	RequestRate    Rate    `json:"request_rate"`
	Burstiness     float64 `json:"burstiness"`
	MaxConcurrency *int    `json:"max_concurrency"`

	Duration  float64 `json:"duration"`
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	// NotSent and Incomplete count requests the run stopped before (not
	// sent) or during (in flight): Ctrl-C or max_seconds. Neither is a
	// failure, and neither enters a latency or throughput figure.
	NotSent               int      `json:"not_sent"`
	Incomplete            int      `json:"incomplete"`
	TotalInputTokens      int      `json:"total_input_tokens"`
	TotalOutputTokens     int      `json:"total_output_tokens"`
	RequestThroughput     float64  `json:"request_throughput"`
	RequestGoodput        *float64 `json:"request_goodput"`
	OutputThroughput      float64  `json:"output_throughput"`
	TotalTokenThroughput  float64  `json:"total_token_throughput"`
	MaxOutputTokensPerS   float64  `json:"max_output_tokens_per_s"`
	MaxConcurrentRequests int      `json:"max_concurrent_requests"`

	MeanTTFTMs   float64 `json:"mean_ttft_ms"`
	MedianTTFTMs float64 `json:"median_ttft_ms"`
	StdTTFTMs    float64 `json:"std_ttft_ms"`
	P50TTFTMs    float64 `json:"p50_ttft_ms"`
	P90TTFTMs    float64 `json:"p90_ttft_ms"`
	P99TTFTMs    float64 `json:"p99_ttft_ms"`

	MeanTPOTMs   float64 `json:"mean_tpot_ms"`
	MedianTPOTMs float64 `json:"median_tpot_ms"`
	StdTPOTMs    float64 `json:"std_tpot_ms"`
	P50TPOTMs    float64 `json:"p50_tpot_ms"`
	P90TPOTMs    float64 `json:"p90_tpot_ms"`
	P99TPOTMs    float64 `json:"p99_tpot_ms"`

	MeanITLMs   float64 `json:"mean_itl_ms"`
	MedianITLMs float64 `json:"median_itl_ms"`
	StdITLMs    float64 `json:"std_itl_ms"`
	P50ITLMs    float64 `json:"p50_itl_ms"`
	P90ITLMs    float64 `json:"p90_itl_ms"`
	P99ITLMs    float64 `json:"p99_itl_ms"`

	MeanE2ELMs   float64 `json:"mean_e2el_ms"`
	MedianE2ELMs float64 `json:"median_e2el_ms"`
	StdE2ELMs    float64 `json:"std_e2el_ms"`
	P50E2ELMs    float64 `json:"p50_e2el_ms"`
	P90E2ELMs    float64 `json:"p90_e2el_ms"`
	P99E2ELMs    float64 `json:"p99_e2el_ms"`

	// autoinfer's additions.
	MeanScheduleDelayMs float64        `json:"mean_schedule_delay_ms"`
	P50ScheduleDelayMs  float64        `json:"p50_schedule_delay_ms"`
	P99ScheduleDelayMs  float64        `json:"p99_schedule_delay_ms"`
	MaxScheduleDelayMs  float64        `json:"max_schedule_delay_ms"`
	AchievedRequestRate float64        `json:"achieved_request_rate"`
	ErrorsByStatus      map[string]int `json:"errors_by_status"`
	ErrorsByType        map[string]int `json:"errors_by_type"`
	TrialID             string         `json:"trial_id"`
	RunID               string         `json:"run_id"`
	Seed                int64          `json:"seed"`
	WarmupRequests      int            `json:"warmup_requests"`
	StreamHash          string         `json:"stream_hash"`
	SentHash            string         `json:"sent_hash"`
	// Client lag: the share of ITLs read in bursts behind a previous event,
	// the client process's p99 goroutine scheduling latency during the run,
	// and the typed flag (null when the client kept up).
	ClientBurstITLFraction float64    `json:"client_burst_itl_fraction"`
	ClientSchedP99Ms       float64    `json:"client_sched_p99_ms"`
	ClientLag              *ClientLag `json:"client_lag"`
	// PercentileRelError is the relative error of the latency percentiles
	// and medians: 0 when they are exact (every value kept), else the
	// histogram's (a streamed virtual run; see docs/whatif.md).
	PercentileRelError float64 `json:"percentile_rel_error,omitempty"`

	// ExtraPercentiles holds p{P}_{metric}_ms for configured percentiles
	// other than 50, 90 and 99; they are written as top-level keys.
	ExtraPercentiles map[string]float64 `json:"-"`
}

// MarshalJSON writes the fixed keys in declaration order, then the extra
// percentile keys sorted.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	b, err := json.Marshal(plain(s))
	if err != nil || len(s.ExtraPercentiles) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(s.ExtraPercentiles))
	for k := range s.ExtraPercentiles {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, k := range keys {
		v, err := json.Marshal(s.ExtraPercentiles[k])
		if err != nil {
			return nil, fmt.Errorf("percentile %s: %w", k, err)
		}
		fmt.Fprintf(&buf, ",%s:%s", strconv.Quote(k), v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the fixed keys and collects p…_ms keys that are not
// fields into ExtraPercentiles, so a saved result round-trips.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("decoding summary: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("decoding summary: %w", err)
	}
	for _, m := range Metrics {
		for k, raw := range all {
			if !isExtraKey(k, m) {
				continue
			}
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if p.ExtraPercentiles == nil {
				p.ExtraPercentiles = map[string]float64{}
			}
			p.ExtraPercentiles[k] = v
		}
	}
	*s = Summary(p)
	return nil
}

// Metrics are the latency metrics with percentiles, in vllm's order.
var Metrics = []string{"ttft", "tpot", "itl", "e2el"}

// fixedPercentiles are always reported as their own fields.
var fixedPercentiles = []float64{50, 90, 99}

func isExtraKey(k, metric string) bool {
	suffix := "_" + metric + "_ms"
	if len(k) <= len(suffix)+1 || k[0] != 'p' || k[len(k)-len(suffix):] != suffix {
		return false
	}
	p, err := strconv.ParseFloat(k[1:len(k)-len(suffix)], 64)
	return err == nil && !slices.Contains(fixedPercentiles, p)
}
