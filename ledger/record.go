package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/stale"
)

// trialRow is a Trial as stored: the typed failure travels as its JSON.
// CumulativeHitRate is a column Trial does not show (rows before schema v6
// hold a cumulative rate there, later rows 0); it is here so that a copy
// between ledgers carries every column.
type trialRow struct {
	Trial
	FailureJSON       string  `db:"failure"`
	CumulativeHitRate float64 `db:"cumulative_prefix_cache_hit_rate"`
}

// requestRow is a Request as stored, keyed by its trial.
type requestRow struct {
	TrialID int64 `db:"trial_id"`
	Request
}

func trialColumns() []string   { return columns(reflect.TypeFor[trialRow]()) }
func requestColumns() []string { return columns(reflect.TypeFor[requestRow]()) }

// Recorded is what Record wrote: the new row's id and the earlier rows it
// made stale.
type Recorded struct {
	ID          int64
	MarkedStale []stale.Mark
}

// Record writes t and its per-request records, and marks the earlier rows
// it invalidates stale (package stale), all in one transaction: either all
// of it is in the ledger or none of it. A nil t.ShedRate is computed from
// reqs.
func (l *Ledger) Record(ctx context.Context, t Trial, reqs []Request) (Recorded, error) {
	if t.ShedRate == nil {
		t.ShedRate = ShedRate(reqs)
	}
	return l.RecordSeq(ctx, t, RequestSeq(reqs))
}

// RequestSeq yields reqs, with no error: a slice as RecordSeq takes it.
func RequestSeq(reqs []Request) iter.Seq2[Request, error] {
	return func(yield func(Request, error) bool) {
		for _, r := range reqs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// RecordSeq is Record with the per-request records read one at a time
// from reqs inside the transaction, so a trial of any length is written
// without holding its records in memory (a run spools them as they
// complete). An error from reqs rolls the whole write back. t.ShedRate is
// written as given: a caller streaming its records counts them as they
// complete (ShedCount).
func (l *Ledger) RecordSeq(ctx context.Context, t Trial, reqs iter.Seq2[Request, error]) (Recorded, error) {
	if t.Clock == "" {
		t.Clock = ClockReal
	}
	row, err := prepare(t)
	if err != nil {
		return Recorded{}, fmt.Errorf("recording trial %q: %w", t.Name, err)
	}
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		return Recorded{}, fmt.Errorf("recording trial %q: %w", t.Name, err)
	}
	defer tx.Rollback()
	if err := l.d.lockWriters(ctx, tx); err != nil {
		return Recorded{}, fmt.Errorf("recording trial %q: %w", t.Name, err)
	}
	rec, err := record(ctx, tx, row, reqs)
	if err != nil {
		return Recorded{}, fmt.Errorf("recording trial %q: %w", t.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return Recorded{}, fmt.Errorf("recording trial %q: committing: %w", t.Name, err)
	}
	return rec, nil
}

func record(ctx context.Context, tx *sqlx.Tx, row trialRow, reqs iter.Seq2[Request, error]) (Recorded, error) {
	if err := checkPredictedBy(ctx, tx, row.Trial); err != nil {
		return Recorded{}, err
	}
	id, err := insertTrial(ctx, tx, row, false)
	if err != nil {
		return Recorded{}, err
	}
	if err := insertRequests(ctx, tx, id, reqs); err != nil {
		return Recorded{}, err
	}
	marks, err := markStale(ctx, tx, id, row.Trial, false)
	if err != nil {
		return Recorded{}, err
	}
	return Recorded{ID: id, MarkedStale: marks}, nil
}

// checkPredictedBy refuses a link that is not from a real-time row to an
// existing virtual row: a pair is a measurement and its prediction.
func checkPredictedBy(ctx context.Context, tx *sqlx.Tx, t Trial) error {
	if t.PredictedBy == nil {
		return nil
	}
	if t.Clock != ClockReal {
		return fmt.Errorf("predicted_by: only a real-time row confirms a prediction (clock %s)", t.Clock)
	}
	var clock string
	err := tx.GetContext(ctx, &clock, tx.Rebind("SELECT clock FROM trials WHERE id = ?"), *t.PredictedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("predicted_by %d: %w", *t.PredictedBy, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("predicted_by %d: %w", *t.PredictedBy, err)
	}
	if clock != ClockVirtual {
		return fmt.Errorf("predicted_by %d: a %s row, want a virtual (predicted) one", *t.PredictedBy, clock)
	}
	return nil
}

// insertTrial inserts a row and returns its id: a new one, or with keepID
// the row's own (a copy between ledgers).
func insertTrial(ctx context.Context, tx *sqlx.Tx, row trialRow, keepID bool) (int64, error) {
	skip := []string{"id"}
	if keepID {
		skip = nil
	}
	q, args, err := sqlx.Named(insertSQL("trials", trialColumns(), skip...)+" RETURNING id", row)
	if err != nil {
		return 0, fmt.Errorf("inserting row: %w", err)
	}
	var id int64
	if err := tx.GetContext(ctx, &id, tx.Rebind(q), args...); err != nil {
		return 0, fmt.Errorf("inserting row: %w", err)
	}
	return id, nil
}

// requestBatch is how many request records one INSERT carries: 16
// columns each stay under both databases' limit on bound parameters
// (SQLite 32766, PostgreSQL 65535), and a batch is one round trip to a
// remote PostgreSQL instead of a thousand.
const requestBatch = 1000

// insertRequests inserts reqs in batches of requestBatch, holding one
// batch at a time.
func insertRequests(ctx context.Context, tx *sqlx.Tx, id int64, reqs iter.Seq2[Request, error]) error {
	var batch []requestRow
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		q, args, err := sqlx.Named(insertSQL("requests", requestColumns()), batch)
		if err != nil {
			return fmt.Errorf("inserting requests: %w", err)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
			return fmt.Errorf("inserting requests %d-%d: %w", batch[0].Index, batch[len(batch)-1].Index, err)
		}
		batch = batch[:0]
		return nil
	}
	for r, err := range reqs {
		if err != nil {
			return fmt.Errorf("reading request records: %w", err)
		}
		if batch == nil {
			batch = make([]requestRow, 0, requestBatch)
		}
		batch = append(batch, requestRow{TrialID: id, Request: r})
		if len(batch) == requestBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// markStale applies the stale rule to the earlier rows of the same
// comparison context (target kind, hardware, model, engine config, request
// stream, topology) that are not stale yet and ran under another router
// config: every such row when t is recorded now, only those that finished
// before t when t is a copy from another ledger (finishedBefore). A row of
// unknown identity (written before schema v4, or without it) marks nothing
// and is never marked.
func markStale(ctx context.Context, tx *sqlx.Tx, id int64, t Trial, finishedBefore bool) ([]stale.Mark, error) {
	if t.Status != StatusOK || t.RouterHash == "" || !t.known() {
		return nil, nil
	}
	var rows []struct {
		ID      int64  `db:"id"`
		Status  string `db:"status"`
		Router  JSON   `db:"router_config"`
		SweepID string `db:"sweep_id"`
		Group   string `db:"replicate_group"`
	}
	// Two range scans of trials_engine (router hashes above and below the
	// new one, '' excluded) rather than a scan of every fresh row of this
	// engine config: most of those share the new row's router hash.
	sameContext := sameContextSQL
	if finishedBefore {
		sameContext += " AND finished_at < :finished_at"
	}
	q, args, err := sqlx.Named(`SELECT id, status, router_config, sweep_id, replicate_group FROM trials
		WHERE engine_hash = :engine_hash AND stale = FALSE AND router_hash > :router_hash AND `+sameContext+`
		UNION ALL
		SELECT id, status, router_config, sweep_id, replicate_group FROM trials
		WHERE engine_hash = :engine_hash AND stale = FALSE AND router_hash < :router_hash AND router_hash > '' AND `+sameContext+`
		ORDER BY id`, t)
	if err != nil {
		return nil, fmt.Errorf("finding rows to mark stale: %w", err)
	}
	if err := tx.SelectContext(ctx, &rows, tx.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("finding rows to mark stale: %w", err)
	}
	// Every row selected shares the new row's comparison context.
	cc := t.comparisonContext()
	earlier := make([]stale.Row, len(rows))
	for i, r := range rows {
		earlier[i] = stale.Row{ID: r.ID, Status: r.Status, Context: cc, PD: t.Prefill > 0,
			RouterConfig: json.RawMessage(r.Router), SweepID: r.SweepID, ReplicateGroup: r.Group}
	}
	marks, err := stale.Marks(stale.Row{ID: id, Status: string(t.Status), Context: cc, PD: t.Prefill > 0,
		RouterConfig: json.RawMessage(t.RouterConfig), SweepID: t.SweepID, ReplicateGroup: t.ReplicateGroup}, earlier)
	if err != nil {
		return nil, fmt.Errorf("marking stale rows: %w", err)
	}
	at := t.FinishedAt
	for _, m := range marks {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE trials SET stale = TRUE, stale_reason = ?, stale_at = ? WHERE id = ?`),
			m.Reason, at, m.ID); err != nil {
			return nil, fmt.Errorf("marking row %d stale: %w", m.ID, err)
		}
	}
	return marks, nil
}

// sameContextSQL selects the rows of a trial's comparison context but for
// the engine config (named parameters from the Trial).
const sameContextSQL = `target_kind = :target_kind AND hardware_hash = :hardware_hash AND model = :model
		AND workload_hash = :workload_hash AND replicas = :replicas AND prefill = :prefill AND decode = :decode AND clock = :clock`

// known reports whether the row says what it was measured on.
func (t Trial) known() bool {
	return t.TargetKind != "" && t.HardwareHash != "" && t.Model != "" && t.WorkloadHash != ""
}

// comparisonContext is everything but the router config that must be
// equal for two rows to be compared.
func (t Trial) comparisonContext() string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%d/%d/%d|%s", t.TargetKind, t.HardwareHash, t.Model, t.EngineHash,
		t.WorkloadHash, t.Replicas, t.Prefill, t.Decode, t.Clock)
}

// prepare validates t and fills in what the ledger computes: hashes,
// failure kind and JSON, UTC times; it clears the stale fields.
func prepare(t Trial) (trialRow, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.Name == "" {
		bad("name: required")
	}
	switch t.Status {
	case StatusOK:
		if t.Failure != nil {
			bad("failure: an ok trial has no failure (got %s)", t.Failure.Kind())
		}
	case StatusFailed:
		if t.Failure == nil {
			bad("failure: required when status is failed")
		}
	case StatusAborted:
	default:
		bad("status: %q is not one of ok, failed, aborted", t.Status)
	}
	if t.Clock != ClockReal && t.Clock != ClockVirtual {
		bad("clock: %q is not one of real, virtual", t.Clock)
	}
	if t.StartedAt.IsZero() || t.FinishedAt.IsZero() {
		bad("started_at, finished_at: required")
	} else if t.FinishedAt.Before(t.StartedAt) {
		bad("finished_at: %s is before started_at %s", t.FinishedAt, t.StartedAt)
	}
	if t.Replicas < 0 || t.Prefill < 0 || t.Decode < 0 ||
		(t.Replicas > 0) == (t.Prefill > 0 || t.Decode > 0) || (t.Prefill > 0) != (t.Decode > 0) {
		bad("topology: want replicas, or prefill and decode counts (got replicas %d, prefill %d, decode %d)",
			t.Replicas, t.Prefill, t.Decode)
	}
	if r := t.Replicate; r != (Replicate{}) && (r.ReplicateGroup == "" || r.Replicates < 2 || r.ReplicateIndex < 0 || r.ReplicateIndex >= r.Replicates) {
		bad("replicate_group, replicate_index, replicates: want a group id, replicates ≥ 2 and 0 ≤ index < replicates (got %q, %d, %d)",
			r.ReplicateGroup, r.ReplicateIndex, r.Replicates)
	}
	engine, err := canonical("engine_config", t.EngineConfig, true)
	if err != nil {
		errs = append(errs, err)
	}
	if _, err := canonical("workload", t.Workload, false); err != nil {
		errs = append(errs, err)
	}
	if _, err := canonical("slo", t.SLO, false); err != nil {
		errs = append(errs, err)
	}
	hardware, err := canonical("hardware_config", t.HardwareConfig, false)
	if err != nil {
		errs = append(errs, err)
	}
	routerID, err := stale.Identity(json.RawMessage(t.RouterConfig))
	if err != nil {
		bad("router_config: %w", err)
	}
	if routerID == nil && t.NeedsRouter() {
		bad("router_config: required with %d replicas, %d prefill, %d decode workers", t.Replicas, t.Prefill, t.Decode)
	}
	if err := errors.Join(errs...); err != nil {
		return trialRow{}, err
	}
	t.ID = 0
	t.EngineHash = hash(engine)
	switch {
	case hardware != nil:
		t.HardwareHash = hash(hardware)
	case t.Hardware != "":
		t.HardwareHash = hash([]byte(t.Hardware))
	default:
		t.HardwareHash = ""
	}
	t.RouterHash = ""
	if routerID != nil {
		t.RouterHash = hash(routerID)
	}
	// Microseconds, PostgreSQL's resolution, on both databases: a row
	// copied between ledgers (ledger push, pull) stays equal to itself.
	t.StartedAt, t.FinishedAt = t.StartedAt.UTC().Truncate(time.Microsecond), t.FinishedAt.UTC().Truncate(time.Microsecond)
	t.Stale, t.StaleReason, t.StaleAt = false, "", nil
	kind, data, err := failure.Encode(t.Failure)
	if err != nil {
		return trialRow{}, err
	}
	t.FailureKind = kind
	return trialRow{Trial: t, FailureJSON: string(data)}, nil
}

func canonical(field string, doc JSON, required bool) ([]byte, error) {
	if len(doc) == 0 {
		if required {
			return nil, fmt.Errorf("%s: required", field)
		}
		return nil, nil
	}
	b, err := stale.Canonical(json.RawMessage(doc))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return b, nil
}

// hash is the first 16 hex digits of the SHA-256 of a canonical document.
func hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:8])
}
