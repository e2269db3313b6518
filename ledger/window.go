package ledger

import "database/sql/driver"

// Window is what the workers counted over the trial's measured window: the
// difference between snapshots of their counters taken right before and
// right after it, so warm-up, gate traffic and earlier trials on the same
// (static) workers never count. Figures are nil (NULL, shown as "–") when
// the workers do not export the series they come from.
type Window struct {
	Figures
	// Engines are the same figures per engine (worker URL), a JSON column.
	Engines EngineFigures `db:"engines" json:"engines"`
}

// Figures are the measured-window worker figures, in total or of one
// engine.
type Figures struct {
	// PrefixCacheHitRate is Δvllm:prefix_cache_hits_total over
	// Δvllm:prefix_cache_queries_total (tokens); nil also when nothing was
	// queried.
	PrefixCacheHitRate *float64 `db:"prefix_cache_hit_rate" json:"prefix_cache_hit_rate"`
	// Preemptions is Δvllm:num_preemptions_total.
	Preemptions *int64 `db:"preemptions" json:"preemptions"`
	// KVTransfers and KVTransferFailures are Δvllm:kv_transfer_pulls_total
	// by result (ok, failed): decode engines' KV pulls under PD.
	KVTransfers        *int64 `db:"kv_transfers" json:"kv_transfers"`
	KVTransferFailures *int64 `db:"kv_transfer_failures" json:"kv_transfer_failures"`
	// KVUsagePeak and KVUsageMean are KV usage (0..1): the mean of
	// vllm:kv_cache_usage_perc sampled through the window; the peak from a
	// simulated engine's per-step usage histogram (to within its 0.05
	// buckets), else the largest sample. In total: the most loaded engine's
	// peak and the engines' mean.
	KVUsagePeak *float64 `db:"kv_usage_peak" json:"kv_usage_peak"`
	KVUsageMean *float64 `db:"kv_usage_mean" json:"kv_usage_mean"`
	// CPUTierHits is Δvllm:external_prefix_cache_hits_total: prompt tokens
	// served from the KV offload (CPU) tier.
	CPUTierHits *int64 `db:"cpu_tier_hits" json:"cpu_tier_hits"`
	// AllTiersHitRate is GPU and CPU-tier hits over prefix-cache queries:
	// the share of prompt tokens whose KV came from any cache tier (vLLM's
	// prefix_cache_hit_rate counts the GPU only). Nil without a CPU-tier
	// series.
	AllTiersHitRate *float64 `db:"all_tiers_hit_rate" json:"all_tiers_hit_rate"`
	// EngineLagRatio is Δautoinfer:sim_step_lag_seconds_total over
	// Δautoinfer:sim_modelled_busy_seconds_total: how far simulated engines'
	// steps ended behind their modelled end, relative to the modelled busy
	// time (real engines export neither).
	EngineLagRatio *float64 `db:"engine_lag_ratio" json:"engine_lag_ratio"`
}

// EngineFigure is one engine's window figures.
type EngineFigure struct {
	Worker string `json:"worker"`
	Figures
}

// EngineFigures are the per-engine window figures, stored as a JSON array.
type EngineFigures []EngineFigure

// Value implements driver.Valuer.
func (e EngineFigures) Value() (driver.Value, error) { return jsonValue(e) }

// Scan implements sql.Scanner.
func (e *EngineFigures) Scan(src any) error { return jsonScan(src, e) }
