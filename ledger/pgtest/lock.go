package pgtest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Hold is an advisory lock a test holds on its own connection, so that
// writers taking the same lock queue behind it: releasing it lets them all
// proceed at once, which forces their transactions to overlap.
type Hold struct {
	conn *pgx.Conn
	key  int64
}

// HoldLock takes advisory lock key in the database url names.
func HoldLock(ctx context.Context, url string, key int64) (*Hold, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return &Hold{conn: conn, key: key}, nil
}

// pollEvery is how often WaitQueued reads pg_locks: PostgreSQL has no
// notification for a session starting to wait on a lock.
const pollEvery = 5 * time.Millisecond

// WaitQueued returns once n other sessions of this database wait for the
// lock (pg_locks rows not granted), or when ctx ends.
func (h *Hold) WaitQueued(ctx context.Context, n int) error {
	// A bigint advisory key is classid (high half) and objid (low half).
	const q = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid::bigint = ($1::bigint >> 32) AND objid::bigint = ($1::bigint & 4294967295)`
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		var waiting int
		if err := h.conn.QueryRow(ctx, q, h.key).Scan(&waiting); err != nil {
			return fmt.Errorf("reading pg_locks: %w", err)
		}
		if waiting >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d sessions queued on the lock: %w", waiting, n, ctx.Err())
		case <-tick.C:
		}
	}
}

// Release lets the queued sessions proceed and closes the connection.
func (h *Hold) Release(ctx context.Context) error {
	if _, err := h.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", h.key); err != nil {
		h.conn.Close(ctx)
		return err
	}
	return h.conn.Close(ctx)
}
