package ledger

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int { return len(migrations()) }

// migrate applies every migration the database lacks, each in its own
// transaction together with the user_version bump, so an interrupted
// upgrade leaves a consistent earlier version.
func migrate(ctx context.Context, db *sqlx.DB) error {
	return migrateTo(ctx, db, SchemaVersion())
}

func migrateTo(ctx context.Context, db *sqlx.DB, target int) error {
	steps := migrations()
	for {
		done, err := migrateStep(ctx, db, steps, target)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration, re-reading the version inside
// the write transaction so two processes opening one file never apply a
// step twice.
func migrateStep(ctx context.Context, db *sqlx.DB, steps []migration, target int) (done bool, err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrating schema: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.GetContext(ctx, &v, "PRAGMA user_version"); err != nil {
		return false, fmt.Errorf("reading schema version: %w", err)
	}
	if v > len(steps) {
		return false, fmt.Errorf("ledger schema version %d is newer than this autoinfer knows (%d): upgrade autoinfer", v, len(steps))
	}
	if v >= target {
		return true, nil
	}
	m := steps[v]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
	}
	// PRAGMA takes no bound parameters; v+1 is an int.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
	}
	return false, nil
}
