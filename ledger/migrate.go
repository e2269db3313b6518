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
func migrate(ctx context.Context, db *sqlx.DB, d dialect) error {
	return migrateTo(ctx, db, d, SchemaVersion())
}

func migrateTo(ctx context.Context, db *sqlx.DB, d dialect, target int) error {
	steps := migrations()
	// Up to date (every open but the first after an upgrade): done
	// without queueing on the writers' lock behind a trial's insert.
	if v, err := d.version(ctx, db); err == nil && v >= target && v <= len(steps) {
		return nil
	}
	for {
		done, err := migrateStep(ctx, db, d, steps, target)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration, re-reading the version inside
// the write transaction, under the writers' lock, so two processes (or
// machines) opening one ledger never apply a step twice.
func migrateStep(ctx context.Context, db *sqlx.DB, d dialect, steps []migration, target int) (done bool, err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrating schema: %w", err)
	}
	defer tx.Rollback()
	if err := d.lockWriters(ctx, tx); err != nil {
		return false, fmt.Errorf("migrating schema: %w", err)
	}
	v, err := d.version(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("reading schema version: %w", err)
	}
	if v > len(steps) {
		return false, fmt.Errorf("ledger schema version %d is newer than this autoinfer knows (%d): upgrade autoinfer", v, len(steps))
	}
	if v >= target {
		return true, nil
	}
	m := steps[v]
	if _, err := tx.ExecContext(ctx, d.ddl(m.sql)); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
	}
	if err := d.setVersion(ctx, tx, v+1); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
	}
	return false, nil
}
