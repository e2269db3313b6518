package ledger

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// dialect is what differs between the databases a ledger lives in (a
// SQLite file, or PostgreSQL for a team): column types, where the schema
// version is kept, how writers exclude each other, and the few SQL
// expressions that are not standard. Everything else — the migrations, the
// queries, the stale rule — is written once, with ? placeholders that
// sqlx rebinds for the driver.
type dialect interface {
	// ddl renders one migration (written in SQLite's types) for this
	// database.
	ddl(sqlite string) string
	// version reads the schema version: the number of migrations applied,
	// 0 for a database that holds no ledger yet.
	version(ctx context.Context, q sqlx.QueryerContext) (int, error)
	// setVersion records the schema version inside the migration's
	// transaction.
	setVersion(ctx context.Context, tx *sqlx.Tx, v int) error
	// hasTrials reports whether the trials table exists.
	hasTrials(ctx context.Context, q sqlx.QueryerContext) (bool, error)
	// lockWriters makes tx the only writer of the ledger until it ends, so
	// a row's stale marking sees every row committed before it.
	lockWriters(ctx context.Context, tx *sqlx.Tx) error
	// jsonText is the text of key in the JSON object stored in column col;
	// NULL when col holds no JSON object (rows without a router store '').
	jsonText(col, key string) string
	// intText is an INTEGER column as compared with a --where value given
	// as text.
	intText(col string) string
	// number is a placeholder for a float64 argument compared with a
	// metric column (INTEGER or REAL).
	number() string
}

// sqliteDialect is the embedded default: one file, writers serialised by
// SQLite's own lock (transactions begin IMMEDIATE, see dsn), the version
// in PRAGMA user_version.
type sqliteDialect struct{}

var _ dialect = sqliteDialect{}

func (sqliteDialect) ddl(sqlite string) string { return sqlite }

func (sqliteDialect) version(ctx context.Context, q sqlx.QueryerContext) (int, error) {
	var v int
	err := sqlx.GetContext(ctx, q, &v, "PRAGMA user_version")
	return v, err
}

func (sqliteDialect) setVersion(ctx context.Context, tx *sqlx.Tx, v int) error {
	// PRAGMA takes no bound parameters; v is an int.
	_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
	return err
}

func (sqliteDialect) hasTrials(ctx context.Context, q sqlx.QueryerContext) (bool, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'trials'")
	return n > 0, err
}

// lockWriters has nothing to do: the transaction began IMMEDIATE and
// already holds SQLite's write lock.
func (sqliteDialect) lockWriters(context.Context, *sqlx.Tx) error { return nil }

func (sqliteDialect) jsonText(col, key string) string {
	return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) THEN json_extract(%[1]s, '$.%[2]s') END)", col, key)
}

// intText leaves the column as it is: a text argument compared with an
// INTEGER column takes the column's numeric affinity, so "2" matches 2.
func (sqliteDialect) intText(col string) string { return col }

func (sqliteDialect) number() string { return "?" }
