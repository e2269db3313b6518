package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/autoinfer/autoinfer/stale"
)

// CopyResult says what Copy did.
type CopyResult struct {
	// Copied rows were inserted, with Requests request records.
	Copied   int   `json:"copied"`
	Requests int64 `json:"requests"`
	// Present rows were in the destination already (same row identity).
	Present int `json:"present"`
	// MarkedStale counts the destination's rows the copied rows made
	// stale, and copied rows a later destination row made stale.
	MarkedStale int `json:"marked_stale"`
}

// CopyOptions tune Copy.
type CopyOptions struct {
	// KeepIDs gives a copied row its source id when the destination has
	// no row with that id and is a SQLite file (ledger pull: ids then
	// match the team ledger's). Otherwise the destination numbers it.
	KeepIDs bool
}

// Copy copies every row of src that dst does not hold, with its request
// records, oldest first; ledger push and pull are Copy in either
// direction. It is idempotent: a row is identified by its name, start
// time (to the microsecond), run id, seed and spec hash, and a row dst
// already holds is skipped, so copying twice copies each row once.
//
// Every column is copied as stored (stale marks included); predicted_by
// is renumbered to the destination's id of the predicting row. Each row
// commits on its own, with its requests and the marks it causes, under
// the writers' lock: an interrupted copy leaves whole rows and the next
// run completes it. The stale rule is then applied between the copied row
// and the destination's rows of its comparison context in finish order: the
// copied row marks the rows that finished before it, and the first row
// finished after it that the rule lets mark it does so (a row that came
// stale keeps its mark unless such a row finished before the one that
// marked it in its source).
func Copy(ctx context.Context, src, dst *Ledger, opt CopyOptions) (CopyResult, error) {
	var res CopyResult
	_, sqliteDst := dst.d.(sqliteDialect)
	keepIDs := opt.KeepIDs && sqliteDst
	ids := map[int64]int64{} // source id → destination id
	rows, err := src.db.QueryxContext(ctx, selectTrials()+" ORDER BY id")
	if err != nil {
		return res, fmt.Errorf("reading %s: %w", src.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r trialRow
		if err := rows.StructScan(&r); err != nil {
			return res, fmt.Errorf("reading %s: %w", src.name, err)
		}
		if err := dst.copyRow(ctx, src, r, ids, keepIDs, &res); err != nil {
			return res, fmt.Errorf("copying row %d (%s) to %s: %w", r.ID, r.Name, dst.name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("reading %s: %w", src.name, err)
	}
	return res, nil
}

func (l *Ledger) copyRow(ctx context.Context, src *Ledger, r trialRow, ids map[int64]int64, keepID bool, res *CopyResult) error {
	srcID := r.ID
	r.StartedAt, r.FinishedAt = r.StartedAt.UTC().Truncate(time.Microsecond), r.FinishedAt.UTC().Truncate(time.Microsecond)
	if r.StaleAt != nil {
		at := r.StaleAt.UTC().Truncate(time.Microsecond)
		r.StaleAt = &at
	}
	if r.PredictedBy != nil {
		to, ok := ids[*r.PredictedBy]
		if !ok {
			return fmt.Errorf("predicted_by %d: the predicting row was not copied", *r.PredictedBy)
		}
		r.PredictedBy = &to
	}
	reqs, err := src.Requests(ctx, srcID)
	if err != nil {
		return err
	}
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := l.d.lockWriters(ctx, tx); err != nil {
		return err
	}
	id, found, err := findRow(ctx, tx, r.Trial)
	if err != nil {
		return err
	}
	if found {
		ids[srcID] = id
		res.Present++
		return nil
	}
	if keepID {
		var taken int
		if err := tx.GetContext(ctx, &taken, tx.Rebind("SELECT count(*) FROM trials WHERE id = ?"), srcID); err != nil {
			return err
		}
		keepID = taken == 0
	}
	if id, err = insertTrial(ctx, tx, r, keepID); err != nil {
		return err
	}
	if err := insertRequests(ctx, tx, id, RequestSeq(reqs)); err != nil {
		return err
	}
	marks, err := markStale(ctx, tx, id, r.Trial, true)
	if err != nil {
		return err
	}
	later, err := markedByLater(ctx, tx, id, r.Trial)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	ids[srcID] = id
	res.Copied++
	res.Requests += int64(len(reqs))
	res.MarkedStale += len(marks) + later
	return nil
}

// findRow looks for t by its identity: name, start and finish times, run
// id, seed, spec hash, clock, engine and router hashes. Times are matched
// to the microsecond, so a row written before times were truncated to it
// (with nanoseconds) is found by its copy.
func findRow(ctx context.Context, tx *sqlx.Tx, t Trial) (int64, bool, error) {
	var ids []int64
	err := tx.SelectContext(ctx, &ids, tx.Rebind(`SELECT id FROM trials WHERE name = ? AND started_at >= ? AND started_at < ?
		AND finished_at >= ? AND finished_at < ? AND run_id = ? AND seed = ? AND spec_hash = ? AND clock = ?
		AND engine_hash = ? AND router_hash = ? ORDER BY id LIMIT 1`),
		t.Name, t.StartedAt, t.StartedAt.Add(time.Microsecond), t.FinishedAt, t.FinishedAt.Add(time.Microsecond),
		t.RunID, t.Seed, t.SpecHash, t.Clock, t.EngineHash, t.RouterHash)
	if err != nil || len(ids) == 0 {
		return 0, false, err
	}
	return ids[0], true, nil
}

// markedByLater marks a copied row when a row of its comparison context
// that finished after it would have marked it, had the rows been recorded
// in finish order: the first such row marks it, unless the row came stale
// and the row that marked it in its source finished earlier. It returns 1
// when it marked the row.
func markedByLater(ctx context.Context, tx *sqlx.Tx, id int64, t Trial) (int, error) {
	if t.RouterHash == "" || !t.known() {
		return 0, nil
	}
	until := ""
	if t.Stale && t.StaleAt != nil {
		until = " AND finished_at < :stale_at"
	}
	q, args, err := sqlx.Named(`SELECT id, status, router_config, sweep_id, replicate_group, finished_at FROM trials
		WHERE engine_hash = :engine_hash AND status = 'ok' AND router_hash != :router_hash AND router_hash > ''
		AND finished_at > :finished_at`+until+` AND `+sameContextSQL+` ORDER BY finished_at, id`, t)
	if err != nil {
		return 0, err
	}
	var later []struct {
		ID       int64     `db:"id"`
		Status   string    `db:"status"`
		Router   JSON      `db:"router_config"`
		SweepID  string    `db:"sweep_id"`
		Group    string    `db:"replicate_group"`
		Finished time.Time `db:"finished_at"`
	}
	if err := tx.SelectContext(ctx, &later, tx.Rebind(q), args...); err != nil {
		return 0, fmt.Errorf("finding later rows: %w", err)
	}
	cc, pd := t.comparisonContext(), t.Prefill > 0
	// The rule skips a stale row; this one is stale only from a later time.
	self := []stale.Row{{ID: id, Status: string(t.Status), Context: cc, PD: pd, RouterConfig: json.RawMessage(t.RouterConfig),
		SweepID: t.SweepID, ReplicateGroup: t.ReplicateGroup}}
	for _, r := range later {
		marks, err := stale.Marks(stale.Row{ID: r.ID, Status: r.Status, Context: cc, PD: pd, RouterConfig: json.RawMessage(r.Router),
			SweepID: r.SweepID, ReplicateGroup: r.Group}, self)
		if err != nil {
			return 0, err
		}
		if len(marks) > 0 {
			_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE trials SET stale = TRUE, stale_reason = ?, stale_at = ? WHERE id = ?`),
				marks[0].Reason, r.Finished.UTC(), id)
			return 1, err
		}
	}
	return 0, nil
}
