package ledger

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"github.com/autoinfer/autoinfer/failure"
)

// Status is a trial's outcome.
type Status string

// Trial outcomes.
const (
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"  // ran and failed; Failure says why
	StatusAborted Status = "aborted" // interrupted (Ctrl-C, SIGTERM) before it finished
)

// Trial is one ledger row. Record computes EngineHash, RouterHash and
// FailureKind and ignores the values passed in, as it does ID and the
// stale fields.
type Trial struct {
	ID         int64     `db:"id" json:"id"`
	Name       string    `db:"name" json:"name"`
	SweepID    string    `db:"sweep_id" json:"sweep_id"`
	Status     Status    `db:"status" json:"status"`
	StartedAt  time.Time `db:"started_at" json:"started_at"`
	FinishedAt time.Time `db:"finished_at" json:"finished_at"`
	Seed       int64     `db:"seed" json:"seed"`
	SpecHash   string    `db:"spec_hash" json:"spec_hash"`

	Identity
	EngineConfig JSON   `db:"engine_config" json:"engine_config"`
	EngineHash   string `db:"engine_hash" json:"engine_hash"`
	Topology
	// RouterConfig is empty only when the trial ran without a router (one
	// replica, no PD).
	RouterConfig JSON   `db:"router_config" json:"router_config"`
	RouterHash   string `db:"router_hash" json:"router_hash"`
	Workload     JSON   `db:"workload" json:"workload"`
	Warmup

	Metrics
	Window
	Gate

	RouterMetricsURL    string `db:"router_metrics_url" json:"router_metrics_url"`
	PolicyDecisions     Counts `db:"policy_decisions" json:"policy_decisions"`
	LoadBalancingEvents int64  `db:"load_balancing_events" json:"load_balancing_events"`
	FinalLoads          Counts `db:"final_loads" json:"final_loads"`
	// ShedRate is the share of the measured requests refused with 503 or
	// 429; Record derives it from the request records when it is nil.
	ShedRate *float64 `db:"shed_rate" json:"shed_rate"`

	RouterRun

	Replicate

	// PredictedBy is, on a real-time row, the id of the virtual row that
	// predicted it: the candidate a search --confirm run confirms, or the
	// trial's own virtual replay (every real-time trial on simulated
	// engines, or on a static or process target that names a profile).
	// Nil when nothing predicted it.
	PredictedBy *int64 `db:"predicted_by" json:"predicted_by,omitempty"`

	FailureKind failure.Kind    `db:"failure_kind" json:"failure_kind"`
	Failure     failure.Failure `db:"-" json:"failure"`

	Stale       bool       `db:"stale" json:"stale"`
	StaleReason string     `db:"stale_reason" json:"stale_reason"`
	StaleAt     *time.Time `db:"stale_at" json:"stale_at"`
}

// Identity is what a row was measured on and with, besides the engine and
// router configs: two rows compare (and one can make the other stale) only
// when all of it is equal. Rows written before schema v4 have it empty and
// are never compared with anything by the stale rule.
type Identity struct {
	// TargetKind is sim, static or process.
	TargetKind string `db:"target_kind" json:"target_kind"`
	// Hardware is the sim profile's name, or the user's target.hardware
	// label for real servers.
	Hardware string `db:"hardware" json:"hardware"`
	// HardwareConfig is the sim profile's fully resolved coefficients (the
	// profile after overrides); empty for real servers.
	HardwareConfig JSON `db:"hardware_config" json:"hardware_config"`
	// HardwareHash identifies the hardware: the hash of HardwareConfig when
	// set, else of Hardware. Record computes it.
	HardwareHash string `db:"hardware_hash" json:"hardware_hash"`
	Model        string `db:"model" json:"model"`
	// WorkloadHash identifies the request stream: a hash of everything that
	// shapes it (workload section, seed, stream name, warm-up count), so
	// equal hashes mean byte-identical traffic.
	WorkloadHash string `db:"workload_hash" json:"workload_hash"`
	// SLO is the spec's slo section (goodput is measured against it).
	SLO JSON `db:"slo" json:"slo"`
	// Clock is "real" or "virtual" (ClockReal, ClockVirtual); Record
	// stores "" as real.
	Clock string `db:"clock" json:"clock"`
}

// Clocks a row was measured on.
const (
	ClockReal    = "real"
	ClockVirtual = "virtual"
)

// Virtual reports whether the row is a virtual-time prediction.
func (id Identity) Virtual() bool { return id.Clock == ClockVirtual }

// RouterRun is what the router itself counted for the trial's run id
// (vllm_router_run_*_total{run_id}, from the X-Run-ID header the driver
// sends): the requests it received and the tokens their usage reported. All
// zero without a router.
type RouterRun struct {
	RunID                  string `db:"run_id" json:"run_id"`
	RouterRequests         int64  `db:"router_requests" json:"router_requests"`
	RouterPromptTokens     int64  `db:"router_prompt_tokens" json:"router_prompt_tokens"`
	RouterCompletionTokens int64  `db:"router_completion_tokens" json:"router_completion_tokens"`
}

// Replicate places a row in a repeated trial: rows sharing a non-empty
// ReplicateGroup are replicates of one trial (equal configs, seeds derived
// from one base seed), ReplicateIndex 0 … Replicates-1. All zero for a
// trial run once.
type Replicate struct {
	ReplicateGroup string `db:"replicate_group" json:"replicate_group,omitempty"`
	ReplicateIndex int    `db:"replicate_index" json:"replicate_index,omitempty"`
	Replicates     int    `db:"replicates" json:"replicates,omitempty"`
}

// Topology is how many workers served the trial: Replicas for collocated
// serving, or Prefill and Decode counts for PD disaggregation.
type Topology struct {
	Replicas int `db:"replicas" json:"replicas"`
	Prefill  int `db:"prefill" json:"prefill"`
	Decode   int `db:"decode" json:"decode"`
}

// NeedsRouter reports whether this topology is served through a router.
func (t Topology) NeedsRouter() bool { return t.Replicas > 1 || t.Prefill > 0 || t.Decode > 0 }

// Warmup is the regime the measured window started from and what the
// warm-up did: requests sent (the ready check included) and failed, and
// the failures by error type.
type Warmup struct {
	WarmupRequests int    `db:"warmup_requests" json:"warmup_requests"`
	FreshRouter    bool   `db:"fresh_router" json:"fresh_router"`
	WarmupSent     int    `db:"warmup_sent" json:"warmup_sent"`
	WarmupFailed   int    `db:"warmup_failed" json:"warmup_failed"`
	WarmupErrors   Counts `db:"warmup_errors" json:"warmup_errors"`
}

// Gate is the quality gate's result; GatePassed is nil when no gate ran.
type Gate struct {
	GatePassed      *bool   `db:"gate_passed" json:"gate_passed"`
	GateKLMean      float64 `db:"gate_kl_mean" json:"gate_kl_mean"`
	GateKLMax       float64 `db:"gate_kl_max" json:"gate_kl_max"`
	GateKLThreshold float64 `db:"gate_kl_threshold" json:"gate_kl_threshold"`
}

// Metrics are the driver's summary metrics under vllm bench serve's result
// keys, plus autoinfer's schedule delay and achieved rate.
type Metrics struct {
	Duration             float64 `db:"duration" json:"duration"`
	Completed            int64   `db:"completed" json:"completed"`
	Failed               int64   `db:"failed" json:"failed"`
	TotalInputTokens     int64   `db:"total_input_tokens" json:"total_input_tokens"`
	TotalOutputTokens    int64   `db:"total_output_tokens" json:"total_output_tokens"`
	RequestThroughput    float64 `db:"request_throughput" json:"request_throughput"`
	RequestGoodput       float64 `db:"request_goodput" json:"request_goodput"`
	OutputThroughput     float64 `db:"output_throughput" json:"output_throughput"`
	TotalTokenThroughput float64 `db:"total_token_throughput" json:"total_token_throughput"`
	MaxOutputTokensPerS  float64 `db:"max_output_tokens_per_s" json:"max_output_tokens_per_s"`
	MaxConcurrentReqs    int64   `db:"max_concurrent_requests" json:"max_concurrent_requests"`

	MeanTTFTMs   float64 `db:"mean_ttft_ms" json:"mean_ttft_ms"`
	MedianTTFTMs float64 `db:"median_ttft_ms" json:"median_ttft_ms"`
	StdTTFTMs    float64 `db:"std_ttft_ms" json:"std_ttft_ms"`
	P50TTFTMs    float64 `db:"p50_ttft_ms" json:"p50_ttft_ms"`
	P90TTFTMs    float64 `db:"p90_ttft_ms" json:"p90_ttft_ms"`
	P99TTFTMs    float64 `db:"p99_ttft_ms" json:"p99_ttft_ms"`

	MeanTPOTMs   float64 `db:"mean_tpot_ms" json:"mean_tpot_ms"`
	MedianTPOTMs float64 `db:"median_tpot_ms" json:"median_tpot_ms"`
	StdTPOTMs    float64 `db:"std_tpot_ms" json:"std_tpot_ms"`
	P50TPOTMs    float64 `db:"p50_tpot_ms" json:"p50_tpot_ms"`
	P90TPOTMs    float64 `db:"p90_tpot_ms" json:"p90_tpot_ms"`
	P99TPOTMs    float64 `db:"p99_tpot_ms" json:"p99_tpot_ms"`

	MeanITLMs   float64 `db:"mean_itl_ms" json:"mean_itl_ms"`
	MedianITLMs float64 `db:"median_itl_ms" json:"median_itl_ms"`
	StdITLMs    float64 `db:"std_itl_ms" json:"std_itl_ms"`
	P50ITLMs    float64 `db:"p50_itl_ms" json:"p50_itl_ms"`
	P90ITLMs    float64 `db:"p90_itl_ms" json:"p90_itl_ms"`
	P99ITLMs    float64 `db:"p99_itl_ms" json:"p99_itl_ms"`

	MeanE2ELMs   float64 `db:"mean_e2el_ms" json:"mean_e2el_ms"`
	MedianE2ELMs float64 `db:"median_e2el_ms" json:"median_e2el_ms"`
	StdE2ELMs    float64 `db:"std_e2el_ms" json:"std_e2el_ms"`
	P50E2ELMs    float64 `db:"p50_e2el_ms" json:"p50_e2el_ms"`
	P90E2ELMs    float64 `db:"p90_e2el_ms" json:"p90_e2el_ms"`
	P99E2ELMs    float64 `db:"p99_e2el_ms" json:"p99_e2el_ms"`

	MeanScheduleDelayMs float64 `db:"mean_schedule_delay_ms" json:"mean_schedule_delay_ms"`
	P99ScheduleDelayMs  float64 `db:"p99_schedule_delay_ms" json:"p99_schedule_delay_ms"`
	MaxScheduleDelayMs  float64 `db:"max_schedule_delay_ms" json:"max_schedule_delay_ms"`
	AchievedRequestRate float64 `db:"achieved_request_rate" json:"achieved_request_rate"`
}

// Request is one measured request of a trial (the requests table).
// Latencies are in milliseconds; send times are relative to the start of
// the measured window. Status is "ok" for a request that completed.
type Request struct {
	Index          int     `db:"request_index" json:"index"`
	SessionID      string  `db:"session_id" json:"session_id"`
	IntendedSendMs float64 `db:"intended_send_ms" json:"intended_send_ms"`
	ActualSendMs   float64 `db:"actual_send_ms" json:"actual_send_ms"`
	TTFTMs         float64 `db:"ttft_ms" json:"ttft_ms"`
	E2ELMs         float64 `db:"e2el_ms" json:"e2el_ms"`
	TPOTMs         float64 `db:"tpot_ms" json:"tpot_ms"`
	ITLs           Floats  `db:"itls" json:"itls"`
	InputTokens    int     `db:"input_tokens" json:"input_tokens"`
	OutputTokens   int     `db:"output_tokens" json:"output_tokens"`
	CachedTokens   int     `db:"cached_tokens" json:"cached_tokens"`
	Status         string  `db:"status" json:"status"`
	ErrorType      string  `db:"error_type" json:"error_type"`
	Error          string  `db:"error" json:"error"`
	// Receipt is the request's route receipt (JSON, receipts.go); empty
	// when none was recorded.
	Receipt JSON `db:"receipt" json:"receipt,omitempty"`
}

// RequestOK is the Request.Status of a completed request.
const RequestOK = "ok"

// JSON is a JSON document stored in a TEXT column (so sqlite3's json
// functions work on it). Empty means absent.
type JSON []byte

// Value implements driver.Valuer.
func (j JSON) Value() (driver.Value, error) { return string(j), nil }

// Scan implements sql.Scanner.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case string:
		*j = JSON(v)
	case []byte:
		*j = append(JSON(nil), v...)
	default:
		return fmt.Errorf("scanning JSON column: unexpected %T", src)
	}
	return nil
}

// MarshalJSON embeds the document as is, or null when empty.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON keeps the document as is.
func (j *JSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*j = nil
		return nil
	}
	*j = append(JSON(nil), b...)
	return nil
}

// Counts maps a label (a worker URL) to a counter value, stored as a JSON
// object: policy decisions per worker, final loads per worker.
type Counts map[string]float64

// Value implements driver.Valuer.
func (c Counts) Value() (driver.Value, error) { return jsonValue(c) }

// Scan implements sql.Scanner.
func (c *Counts) Scan(src any) error { return jsonScan(src, c) }

// Floats is a list of numbers stored as a JSON array (inter-token latencies).
type Floats []float64

// Value implements driver.Valuer.
func (f Floats) Value() (driver.Value, error) { return jsonValue(f) }

// Scan implements sql.Scanner.
func (f *Floats) Scan(src any) error { return jsonScan(src, f) }

func jsonValue(v any) (driver.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON column: %w", err)
	}
	return string(b), nil
}

func jsonScan(src, dst any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("scanning JSON column: unexpected %T", src)
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("scanning JSON column: %w", err)
	}
	return nil
}
