package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Ledger is an open ledger: a SQLite file, or a PostgreSQL database a team
// shares. It is safe for concurrent use; writers are serialised by the
// database (SQLite's lock across processes, with a busy timeout; an
// advisory lock on PostgreSQL, see postgresDialect).
type Ledger struct {
	db *sqlx.DB
	d  dialect
	// name is the location with any password masked (Redact).
	name string
}

// Name is where the ledger lives, fit to print: the SQLite path, or the
// PostgreSQL URL with its password masked.
func (l *Ledger) Name() string { return l.name }

// ErrNotLedger is wrapped by opens of a SQLite (or other) file that is not
// an autoinfer ledger: autoinfer never writes its schema into a file that
// already holds someone else's tables.
var ErrNotLedger = errors.New("not an autoinfer ledger")

// Open opens the ledger at location for writing: a SQLite file, created
// if needed, or a postgres:// URL (IsPostgres). It refuses a database that
// holds other tables and a corrupted file (PRAGMA quick_check), then
// migrates the schema to the version this binary knows. Only writers
// migrate.
func Open(ctx context.Context, location string) (*Ledger, error) {
	if IsPostgres(location) {
		return openPostgres(ctx, location, false)
	}
	path := location
	if err := checkWritable(ctx, path); err != nil {
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	db, err := sqlx.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	if err := migrate(ctx, db, sqliteDialect{}); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	return &Ledger{db: db, d: sqliteDialect{}, name: path}, nil
}

// OpenReadOnly opens an existing ledger for reading: the file is opened
// read-only (a PostgreSQL session runs read-only transactions), so a read
// command can never change it. A missing file or database wraps
// fs.ErrNotExist, a file that is not a ledger ErrNotLedger, and a ledger
// written by an older autoinfer asks for `autoinfer ledger migrate`.
func OpenReadOnly(ctx context.Context, location string) (*Ledger, error) {
	if IsPostgres(location) {
		return openPostgres(ctx, location, true)
	}
	path := location
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("ledger %s does not exist: %w", path, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	db, err := sqlx.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	l := &Ledger{db: db, d: sqliteDialect{}, name: path}
	if err := l.checkReadable(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	return l, nil
}

// checkReadable refuses a database that is not a ledger, or not yet at
// this binary's schema version.
func (l *Ledger) checkReadable(ctx context.Context) error {
	v, err := ledgerVersion(ctx, l.db, l.d)
	if err == nil && v < SchemaVersion() {
		err = fmt.Errorf("schema version %d is older than this autoinfer's (%d): run `autoinfer ledger migrate --ledger %s` once",
			v, SchemaVersion(), shellQuote(l.name))
	}
	return err
}

// shellQuote quotes a location for a command line (a URL holds & and ?).
func shellQuote(s string) string {
	if strings.ContainsAny(s, " &?;|'\"$`*()<>#") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// Close closes the database.
func (l *Ledger) Close() error { return l.db.Close() }

// checkWritable refuses what a writer must not touch: a file SQLite cannot
// read, a database with tables but no ledger version (someone else's), and
// a corrupted ledger. A missing or empty file is a new ledger. It looks
// through a read-only connection, because the writer's connection pragmas
// (journal_mode=WAL) would already change a foreign file's header.
func checkWritable(ctx context.Context, path string) error {
	if st, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return nil
	}
	db, err := sqlx.Open("sqlite", dsn(path, true))
	if err != nil {
		return err
	}
	defer db.Close()
	var version, objects int
	if err := db.GetContext(ctx, &version, "PRAGMA user_version"); err != nil {
		return notDatabase(err)
	}
	if err := db.GetContext(ctx, &objects, "SELECT count(*) FROM sqlite_master"); err != nil {
		return notDatabase(err)
	}
	if version == 0 && objects > 0 {
		return fmt.Errorf("%w: the database has %d schema objects and no ledger version", ErrNotLedger, objects)
	}
	if version == 0 {
		return nil
	}
	return quickCheck(ctx, db)
}

// ledgerVersion is the schema version of a ledger, or an error when the
// database is not one (no version, or no trials table).
func ledgerVersion(ctx context.Context, db *sqlx.DB, d dialect) (int, error) {
	version, err := d.version(ctx, db)
	if err != nil {
		return 0, notDatabase(err)
	}
	trials, err := d.hasTrials(ctx, db)
	if err != nil {
		return 0, notDatabase(err)
	}
	switch {
	case version == 0 || !trials:
		return 0, fmt.Errorf("%w: no trials table or ledger version", ErrNotLedger)
	case version > SchemaVersion():
		return 0, fmt.Errorf("ledger schema version %d is newer than this autoinfer knows (%d): upgrade autoinfer", version, SchemaVersion())
	}
	return version, nil
}

// quickCheck runs SQLite's quick_check (O(pages), no index cross-check) so a
// damaged file is reported before a trial's row is written into it.
func quickCheck(ctx context.Context, db *sqlx.DB) error {
	var res []string
	if err := db.SelectContext(ctx, &res, "PRAGMA quick_check"); err != nil {
		return notDatabase(err)
	}
	if len(res) != 1 || res[0] != "ok" {
		return fmt.Errorf("ledger is corrupted (quick_check: %s)", strings.Join(res, "; "))
	}
	return nil
}

// notDatabase turns SQLite's "file is not a database" into a sentence that
// names the likely cause.
func notDatabase(err error) error {
	switch msg := err.Error(); {
	case strings.Contains(msg, "not a database"):
		return fmt.Errorf("%w: the file is not a SQLite database (%v)", ErrNotLedger, err)
	case strings.Contains(msg, "malformed"):
		return fmt.Errorf("ledger is corrupted: %w", err)
	}
	return fmt.Errorf("reading ledger version: %w", err)
}

// dsn sets the pragmas on every pooled connection. Writers: WAL so readers
// never block the writer, synchronous=NORMAL (durable at checkpoints, never
// corrupt), a busy timeout so concurrent writers wait instead of failing,
// foreign keys for the requests table, and IMMEDIATE transactions so a
// writer takes the write lock up front and never deadlocks upgrading.
// Readers open the file read-only and set no journal mode (that would be a
// write).
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	pragmas := []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"}
	if readOnly {
		pragmas = []string{"busy_timeout(10000)", "query_only(1)"}
		q.Set("mode", "ro")
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	q.Set("_timezone", "UTC")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}
