package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/failure"
)

// ErrNotFound is returned by Get for an id the ledger does not hold.
var ErrNotFound = errors.New("no such trial")

// Get returns one row by id.
func (l *Ledger) Get(ctx context.Context, id int64) (Trial, error) {
	var row trialRow
	err := l.db.GetContext(ctx, &row, l.db.Rebind(selectTrials()+" WHERE id = ?"), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Trial{}, fmt.Errorf("trial %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Trial{}, fmt.Errorf("reading trial %d: %w", id, err)
	}
	return row.decode()
}

// Requests returns a trial's per-request records in index order.
func (l *Ledger) Requests(ctx context.Context, id int64) ([]Request, error) {
	var rows []requestRow
	q := "SELECT " + strings.Join(requestColumns(), ", ") + " FROM requests WHERE trial_id = ? ORDER BY request_index"
	if err := l.db.SelectContext(ctx, &rows, l.db.Rebind(q), id); err != nil {
		return nil, fmt.Errorf("reading requests of trial %d: %w", id, err)
	}
	out := make([]Request, len(rows))
	for i, r := range rows {
		out[i] = r.Request
	}
	return out, nil
}

// Filter selects rows. Zero fields do not filter.
type Filter struct {
	Name    string
	SweepID string
	Status  Status
	// IncludeStale keeps stale rows; they are left out otherwise.
	IncludeStale bool
	// IncludeVirtual keeps virtual-clock rows (predictions); they are left
	// out otherwise, unless Where names a clock.
	IncludeVirtual bool
	// Where holds equality filters on the keys WhereKeys lists.
	Where map[string]string
	// Bounds keep rows whose metric satisfies every bound, e.g.
	// p99_ttft_ms < 500: "the most tokens/s under a TTFT p99 of 500 ms".
	Bounds []Bound
	// Predicted keeps only real-time rows that confirm a virtual
	// prediction (predicted_by set: search --confirm, or the trial's own
	// virtual replay).
	Predicted bool
	// Limit caps the number of rows (0: no cap); the newest come first.
	Limit int
}

// Bound is a metric condition: Metric Op Value, Op one of < <= > >=.
type Bound struct {
	Metric string
	Op     string
	Value  float64
}

func (b Bound) sql(d dialect) (string, error) {
	if _, err := LookupMetric(b.Metric); err != nil {
		return "", fmt.Errorf("bound: %w", err)
	}
	switch b.Op {
	case "<", "<=", ">", ">=":
	default:
		return "", fmt.Errorf("bound %s: operator %q is not one of < <= > >=", b.Metric, b.Op)
	}
	// The metric name is a column (LookupMetric lists only columns).
	return b.Metric + " " + b.Op + " " + d.number(), nil
}

// whereExprs maps a --where key to the SQL expression it compares.
func whereExprs(d dialect) map[string]string {
	exprs := map[string]string{
		"name": "name", "sweep_id": "sweep_id", "status": "status", "spec_hash": "spec_hash",
		"engine_hash": "engine_hash", "router_hash": "router_hash", "failure_kind": "failure_kind",
		"target_kind": "target_kind", "hardware": "hardware", "hardware_hash": "hardware_hash", "workload_hash": "workload_hash",
		"replicate_group": "replicate_group", "clock": "clock",
		// Rows without a router (one replica, no PD) store an empty
		// router_config; parsing it would fail the whole query.
		"model":  d.jsonText("engine_config", "model"),
		"policy": d.jsonText("router_config", "policy"),
	}
	for _, col := range []string{"seed", "replicas", "prefill", "decode", "predicted_by"} {
		exprs[col] = d.intText(col)
	}
	return exprs
}

// WhereKeys lists the keys Filter.Where accepts.
func WhereKeys() []string { return slices.Sorted(maps.Keys(whereExprs(sqliteDialect{}))) }

// sql renders the filter as a WHERE clause (? placeholders) and its
// arguments.
func (f Filter) sql(d dialect) (string, []any, error) {
	var conds []string
	var args []any
	add := func(expr string, v any) {
		conds = append(conds, expr+" = ?")
		args = append(args, v)
	}
	if f.Name != "" {
		add("name", f.Name)
	}
	if f.SweepID != "" {
		add("sweep_id", f.SweepID)
	}
	if f.Status != "" {
		add("status", string(f.Status))
	}
	if !f.IncludeStale {
		conds = append(conds, "stale = FALSE")
	}
	if _, named := f.Where["clock"]; !f.IncludeVirtual && !named {
		conds = append(conds, "clock = 'real'")
	}
	if f.Predicted {
		conds = append(conds, "predicted_by IS NOT NULL")
	}
	exprs := whereExprs(d)
	for _, k := range slices.Sorted(maps.Keys(f.Where)) {
		expr, ok := exprs[k]
		if !ok {
			return "", nil, fmt.Errorf("where: unknown key %q (valid: %s)", k, strings.Join(WhereKeys(), ", "))
		}
		add(expr, f.Where[k])
	}
	for _, b := range f.Bounds {
		cond, err := b.sql(d)
		if err != nil {
			return "", nil, err
		}
		conds = append(conds, cond)
		args = append(args, b.Value)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// List returns the rows f selects, newest first.
func (l *Ledger) List(ctx context.Context, f Filter) ([]Trial, error) {
	var out []Trial
	err := l.Each(ctx, f, func(t Trial) error {
		out = append(out, t)
		return nil
	})
	return out, err
}

// Each calls fn for every row f selects, newest first, reading one row at a
// time: memory stays flat however many rows match. An error from fn stops
// the scan and is returned as is.
func (l *Ledger) Each(ctx context.Context, f Filter, fn func(Trial) error) error {
	where, args, err := f.sql(l.d)
	if err != nil {
		return err
	}
	q := selectTrials() + where + " ORDER BY id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := l.db.QueryxContext(ctx, l.db.Rebind(q), args...)
	if err != nil {
		return fmt.Errorf("listing trials: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r trialRow
		if err := rows.StructScan(&r); err != nil {
			return fmt.Errorf("listing trials: %w", err)
		}
		t, err := r.decode()
		if err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("listing trials: %w", err)
	}
	return nil
}

func selectTrials() string { return "SELECT " + strings.Join(trialColumns(), ", ") + " FROM trials" }

func (r trialRow) decode() (Trial, error) {
	f, err := failure.Decode(r.FailureKind, []byte(r.FailureJSON))
	if err != nil {
		return Trial{}, fmt.Errorf("trial %d: %w", r.ID, err)
	}
	t := r.Trial
	t.Failure = f
	// PostgreSQL's driver reads times in the local zone; rows are UTC.
	t.StartedAt, t.FinishedAt = t.StartedAt.UTC(), t.FinishedAt.UTC()
	if t.StaleAt != nil {
		at := t.StaleAt.UTC()
		t.StaleAt = &at
	}
	return t, nil
}
