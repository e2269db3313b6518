package ledger

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger/pgtest"
)

// The PostgreSQL schema is the SQLite one: the same tables and columns in
// the same order, each of the corresponding type.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	ctx := t.Context()
	lite, _ := openTemp(t)
	pgl, _ := openPostgresTemp(t)
	want := map[string]string{"INTEGER": "bigint", "REAL": "double precision", "TEXT": "text",
		"DATETIME": "timestamp with time zone", "BOOL": "boolean"}
	for _, table := range []string{"trials", "requests"} {
		var liteCols []struct {
			Name string `db:"name"`
			Type string `db:"type"`
		}
		if err := lite.db.SelectContext(ctx, &liteCols, "SELECT name, type FROM pragma_table_info('"+table+"') ORDER BY cid"); err != nil {
			t.Fatal(err)
		}
		var pgCols []struct {
			Name string `db:"column_name"`
			Type string `db:"data_type"`
		}
		if err := pgl.db.SelectContext(ctx, &pgCols, `SELECT column_name, data_type FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table); err != nil {
			t.Fatal(err)
		}
		if len(liteCols) != len(pgCols) {
			t.Fatalf("%s: %d columns in SQLite, %d in PostgreSQL", table, len(liteCols), len(pgCols))
		}
		for i, c := range liteCols {
			typ := c.Type
			if c.Name == "stale" || c.Name == "fresh_router" || c.Name == "gate_passed" {
				typ = "BOOL"
			}
			if pgCols[i].Name != c.Name || pgCols[i].Type != want[typ] {
				t.Errorf("%s column %d: SQLite %s %s, PostgreSQL %s %s (want %s)", table, i, c.Name, c.Type, pgCols[i].Name, pgCols[i].Type, want[typ])
			}
		}
	}
	for _, l := range []*Ledger{lite, pgl} {
		if v, err := l.d.version(ctx, l.db); err != nil || v != SchemaVersion() {
			t.Errorf("%s: schema version %d, %v", l.Name(), v, err)
		}
	}
}

// A password in a ledger URL appears in no error, and Name masks it.
func TestPostgresCredentialsNeverInErrors(t *testing.T) {
	ctx := t.Context()
	good := pg.Database(t)
	u, err := url.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "wr0ng-Pass"
	wrong := *u
	wrong.User = url.UserPassword(pgtest.Superuser, secret)
	param := *u
	param.User = url.User(pgtest.Superuser)
	param.RawQuery = "sslmode=disable&password=" + secret
	missing := *u
	missing.Path = "/no_such_db"
	for _, loc := range []string{wrong.String(), param.String(), "postgres://autoinfer:" + secret + "@127.0.0.1:notaport/db",
		"postgres://autoinfer:" + secret + "@%zz/db"} {
		for name, open := range map[string]func(context.Context, string) (*Ledger, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
			_, err := open(ctx, loc)
			if err == nil {
				t.Fatalf("%s(%s) succeeded", name, Redact(loc))
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows the password: %v", name, err)
			}
		}
		if strings.Contains(Redact(loc), secret) {
			t.Errorf("Redact(%q) = %q", loc, Redact(loc))
		}
	}
	if _, err := OpenReadOnly(ctx, missing.String()); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), pgtest.Password) {
		t.Errorf("OpenReadOnly of a missing database: %v, want fs.ErrNotExist without the password", err)
	}
	l, err := Open(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if strings.Contains(l.Name(), pgtest.Password) || !strings.Contains(l.Name(), "xxxxx") {
		t.Errorf("Name() = %q, want the password masked", l.Name())
	}
}

// A writer refuses a schema that holds someone else's tables, and neither
// kind of open changes it.
func TestPostgresRefusesForeignSchema(t *testing.T) {
	ctx := t.Context()
	loc := pg.Database(t)
	db, _ := rawOpen(t, loc)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, loc); !errors.Is(err, ErrNotLedger) || !strings.Contains(err.Error(), "notes") {
		t.Errorf("Open on a foreign schema: %v, want ErrNotLedger naming its table", err)
	}
	if _, err := OpenReadOnly(ctx, loc); !errors.Is(err, ErrNotLedger) {
		t.Errorf("OpenReadOnly on a foreign schema: %v, want ErrNotLedger", err)
	}
	var tables int
	if err := db.GetContext(ctx, &tables, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"); err != nil || tables != 1 {
		t.Errorf("the schema has %d tables (%v), want only notes", tables, err)
	}
}
