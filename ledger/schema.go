package ledger

// migration is one schema step. Versions are 1-based and contiguous: the
// database's PRAGMA user_version is the number of migrations applied. A
// released migration is never edited; a new column is a new migration.
type migration struct {
	name string
	sql  string
}

// migrations returns the schema history, oldest first.
func migrations() []migration {
	return []migration{
		{"trials", schemaTrials},
		{"requests", schemaRequests},
		{"router_run_counts", schemaRouterRun},
		{"trial_identity", schemaIdentity},
		{"replicates", schemaReplicates},
		{"window_figures", schemaWindow},
		{"clock", schemaClock},
		{"predicted_by", schemaPredictedBy},
		{"shed_rate", schemaShedRate},
		{"request_receipts", schemaReceipts},
	}
}

// The summary metric columns come before the JSON documents so that scans
// reading only metrics (Pareto) stop early in each record.
const schemaTrials = `
CREATE TABLE trials (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	name          TEXT    NOT NULL,
	sweep_id      TEXT    NOT NULL DEFAULT '',
	status        TEXT    NOT NULL CHECK (status IN ('ok', 'failed', 'aborted')),
	stale         INTEGER NOT NULL DEFAULT 0 CHECK (stale IN (0, 1)),
	started_at    DATETIME NOT NULL,
	finished_at   DATETIME NOT NULL,
	seed          INTEGER NOT NULL DEFAULT 0,
	spec_hash     TEXT    NOT NULL DEFAULT '',
	engine_hash   TEXT    NOT NULL,
	router_hash   TEXT    NOT NULL DEFAULT '',
	replicas      INTEGER NOT NULL DEFAULT 0,
	prefill       INTEGER NOT NULL DEFAULT 0,
	decode        INTEGER NOT NULL DEFAULT 0,
	warmup_requests INTEGER NOT NULL DEFAULT 0,
	fresh_router  INTEGER NOT NULL DEFAULT 0,

	duration                REAL    NOT NULL DEFAULT 0,
	completed               INTEGER NOT NULL DEFAULT 0,
	failed                  INTEGER NOT NULL DEFAULT 0,
	total_input_tokens      INTEGER NOT NULL DEFAULT 0,
	total_output_tokens     INTEGER NOT NULL DEFAULT 0,
	request_throughput      REAL    NOT NULL DEFAULT 0,
	request_goodput         REAL    NOT NULL DEFAULT 0,
	output_throughput       REAL    NOT NULL DEFAULT 0,
	total_token_throughput  REAL    NOT NULL DEFAULT 0,
	max_output_tokens_per_s REAL    NOT NULL DEFAULT 0,
	max_concurrent_requests INTEGER NOT NULL DEFAULT 0,
	mean_ttft_ms   REAL NOT NULL DEFAULT 0,
	median_ttft_ms REAL NOT NULL DEFAULT 0,
	std_ttft_ms    REAL NOT NULL DEFAULT 0,
	p50_ttft_ms    REAL NOT NULL DEFAULT 0,
	p90_ttft_ms    REAL NOT NULL DEFAULT 0,
	p99_ttft_ms    REAL NOT NULL DEFAULT 0,
	mean_tpot_ms   REAL NOT NULL DEFAULT 0,
	median_tpot_ms REAL NOT NULL DEFAULT 0,
	std_tpot_ms    REAL NOT NULL DEFAULT 0,
	p50_tpot_ms    REAL NOT NULL DEFAULT 0,
	p90_tpot_ms    REAL NOT NULL DEFAULT 0,
	p99_tpot_ms    REAL NOT NULL DEFAULT 0,
	mean_itl_ms    REAL NOT NULL DEFAULT 0,
	median_itl_ms  REAL NOT NULL DEFAULT 0,
	std_itl_ms     REAL NOT NULL DEFAULT 0,
	p50_itl_ms     REAL NOT NULL DEFAULT 0,
	p90_itl_ms     REAL NOT NULL DEFAULT 0,
	p99_itl_ms     REAL NOT NULL DEFAULT 0,
	mean_e2el_ms   REAL NOT NULL DEFAULT 0,
	median_e2el_ms REAL NOT NULL DEFAULT 0,
	std_e2el_ms    REAL NOT NULL DEFAULT 0,
	p50_e2el_ms    REAL NOT NULL DEFAULT 0,
	p90_e2el_ms    REAL NOT NULL DEFAULT 0,
	p99_e2el_ms    REAL NOT NULL DEFAULT 0,
	mean_schedule_delay_ms REAL NOT NULL DEFAULT 0,
	p99_schedule_delay_ms  REAL NOT NULL DEFAULT 0,
	max_schedule_delay_ms  REAL NOT NULL DEFAULT 0,
	achieved_request_rate  REAL NOT NULL DEFAULT 0,
	prefix_cache_hit_rate  REAL NOT NULL DEFAULT 0,
	gate_passed       INTEGER CHECK (gate_passed IN (0, 1)),
	gate_kl_mean      REAL NOT NULL DEFAULT 0,
	gate_kl_max       REAL NOT NULL DEFAULT 0,
	gate_kl_threshold REAL NOT NULL DEFAULT 0,
	load_balancing_events INTEGER NOT NULL DEFAULT 0,

	failure_kind  TEXT NOT NULL DEFAULT '',
	stale_reason  TEXT NOT NULL DEFAULT '',
	stale_at      DATETIME,
	router_metrics_url TEXT NOT NULL DEFAULT '',
	engine_config TEXT NOT NULL,
	router_config TEXT NOT NULL DEFAULT '',
	workload      TEXT NOT NULL DEFAULT '',
	policy_decisions TEXT NOT NULL DEFAULT 'null',
	final_loads   TEXT NOT NULL DEFAULT 'null',
	failure       TEXT NOT NULL DEFAULT '',
	CHECK ((status = 'ok') = (failure_kind = '') OR status = 'aborted')
);
CREATE INDEX trials_engine ON trials (engine_hash, stale, router_hash);
CREATE INDEX trials_name ON trials (name, started_at);
CREATE INDEX trials_sweep ON trials (sweep_id);
`

// Per-request records, written in the same transaction as their trial.
const schemaRequests = `
CREATE TABLE requests (
	trial_id         INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
	request_index    INTEGER NOT NULL,
	status           TEXT    NOT NULL DEFAULT 'ok',
	ttft_ms          REAL    NOT NULL DEFAULT 0,
	tpot_ms          REAL    NOT NULL DEFAULT 0,
	e2el_ms          REAL    NOT NULL DEFAULT 0,
	intended_send_ms REAL    NOT NULL DEFAULT 0,
	actual_send_ms   REAL    NOT NULL DEFAULT 0,
	input_tokens     INTEGER NOT NULL DEFAULT 0,
	output_tokens    INTEGER NOT NULL DEFAULT 0,
	cached_tokens    INTEGER NOT NULL DEFAULT 0,
	session_id       TEXT    NOT NULL DEFAULT '',
	error_type       TEXT    NOT NULL DEFAULT '',
	error            TEXT    NOT NULL DEFAULT '',
	itls             TEXT    NOT NULL DEFAULT 'null',
	PRIMARY KEY (trial_id, request_index)
) WITHOUT ROWID;
`

// schemaRouterRun adds what the router itself counted for the trial's run id,
// so a row's request and token counts do not rest on the driver alone.
const schemaRouterRun = `
ALTER TABLE trials ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN router_requests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN router_prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN router_completion_tokens INTEGER NOT NULL DEFAULT 0;
`

// schemaIdentity records what a row was measured on (target kind, hardware,
// model, request stream, SLOs), so rows of another simulated profile, a
// real GPU or other traffic are told apart and never make each other stale.
// Earlier rows keep empty values: unknown identity, compared with nothing.
const schemaIdentity = `
ALTER TABLE trials ADD COLUMN target_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN hardware TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN hardware_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN workload_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN hardware_config TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN slo TEXT NOT NULL DEFAULT '';
CREATE INDEX trials_hardware ON trials (hardware, target_kind);
`

// schemaReplicates groups the runs of a repeated trial (spec repeats: N):
// rows of one replicate group are one trial measured N times, reported as
// a mean with a confidence interval and never marking each other stale.
// Earlier rows keep an empty group: a trial run once.
const schemaReplicates = `
ALTER TABLE trials ADD COLUMN replicate_group TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN replicate_index INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN replicates INTEGER NOT NULL DEFAULT 0;
CREATE INDEX trials_replicate_group ON trials (replicate_group) WHERE replicate_group != '';
`

// schemaWindow records the workers' figures over the measured window only
// (snapshots right before and after it), NULL when the workers do not
// export them, plus the warm-up's outcome and the host-overload figures.
// The cumulative hit rate earlier rows recorded (warm-up, gate and, on
// static workers, every earlier trial included) is not a measured-window
// figure: it stays readable under its own name and those rows' window
// figures are NULL.
const schemaWindow = `
ALTER TABLE trials RENAME COLUMN prefix_cache_hit_rate TO cumulative_prefix_cache_hit_rate;
ALTER TABLE trials ADD COLUMN prefix_cache_hit_rate REAL;
ALTER TABLE trials ADD COLUMN preemptions INTEGER;
ALTER TABLE trials ADD COLUMN kv_transfers INTEGER;
ALTER TABLE trials ADD COLUMN kv_transfer_failures INTEGER;
ALTER TABLE trials ADD COLUMN kv_usage_peak REAL;
ALTER TABLE trials ADD COLUMN kv_usage_mean REAL;
ALTER TABLE trials ADD COLUMN cpu_tier_hits INTEGER;
ALTER TABLE trials ADD COLUMN all_tiers_hit_rate REAL;
ALTER TABLE trials ADD COLUMN engine_lag_ratio REAL;
ALTER TABLE trials ADD COLUMN engines TEXT NOT NULL DEFAULT 'null';
ALTER TABLE trials ADD COLUMN warmup_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN warmup_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN warmup_errors TEXT NOT NULL DEFAULT 'null';
`

// schemaClock records the clock a row was measured on: "real" (every
// earlier row) or "virtual" (a simulated deployment on one discrete-event
// clock, docs/whatif.md). Virtual rows are predictions: they never make
// real-time rows stale and join fronts and lists only when asked.
const schemaClock = `
ALTER TABLE trials ADD COLUMN clock TEXT NOT NULL DEFAULT 'real' CHECK (clock IN ('real', 'virtual'));
CREATE INDEX trials_clock ON trials (clock) WHERE clock != 'real';
`

// schemaPredictedBy links a real-time row to the virtual row that predicted
// it (autoinfer search --confirm): the virtual row's id, NULL for every
// other row. ledger compare --predicted lists the pairs.
const schemaPredictedBy = `
ALTER TABLE trials ADD COLUMN predicted_by INTEGER REFERENCES trials (id);
CREATE INDEX trials_predicted_by ON trials (predicted_by) WHERE predicted_by IS NOT NULL;
`

// schemaShedRate is the share of a trial's measured requests refused with
// 503 or 429 (shed.go); NULL on rows recorded before it and on rows without
// request records.
const schemaShedRate = `
ALTER TABLE trials ADD COLUMN shed_rate REAL;
`

// schemaReceipts stores each request's route receipt (receipts.go): the
// router's decision with every candidate's scores and predicted (and, on
// the virtual clock, held) prefix-cache tokens, as JSON; ” for a request
// without one (no router, or a router that reports none).
const schemaReceipts = `
ALTER TABLE requests ADD COLUMN receipt TEXT NOT NULL DEFAULT '';
`
