package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Ledger is an open ledger file. It is safe for concurrent use; SQLite
// serialises writers (across processes too, with a busy timeout).
type Ledger struct {
	db *sqlx.DB
}

// Open opens the ledger at path, creating it if needed, and migrates its
// schema to the version this binary knows.
func Open(ctx context.Context, path string) (*Ledger, error) {
	db, err := sqlx.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	return &Ledger{db: db}, nil
}

// OpenExisting is Open for readers: a missing file is an error wrapping
// fs.ErrNotExist instead of a new empty ledger.
func OpenExisting(ctx context.Context, path string) (*Ledger, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("ledger %s does not exist: %w", path, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	return Open(ctx, path)
}

// Close closes the database.
func (l *Ledger) Close() error { return l.db.Close() }

// dsn sets the pragmas on every pooled connection: WAL so readers never
// block the writer, synchronous=NORMAL (durable at checkpoints, never
// corrupt), a busy timeout so concurrent writers wait instead of failing,
// foreign keys for the requests table. Transactions begin IMMEDIATE so a
// writer takes the write lock up front and never deadlocks upgrading.
func dsn(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	q.Set("_timezone", "UTC")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}
