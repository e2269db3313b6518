package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/autoinfer/autoinfer/ledger/pgtest"
)

// pg is the PostgreSQL server of this package's tests, started by the
// first test that needs it.
var pg pgtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping postgres:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// backend opens empty, writable ledgers of one database kind and returns
// each with its location; empty returns the location of an empty
// database (no ledger yet).
type backend struct {
	name  string
	open  func(t testing.TB) (*Ledger, string)
	empty func(t testing.TB) string
}

func backends() []backend {
	return []backend{
		{"sqlite", openTemp, func(t testing.TB) string { return filepath.Join(t.TempDir(), "ledger.db") }},
		{"postgres", openPostgresTemp, pg.Database},
	}
}

// openPostgresTemp opens a ledger in a fresh database of the shared
// server.
func openPostgresTemp(t testing.TB) (*Ledger, string) {
	t.Helper()
	url := pg.Database(t)
	l, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, url
}

// rawOpen opens a location without checking or migrating it, to build
// databases as earlier versions left them.
func rawOpen(t testing.TB, location string) (*sqlx.DB, dialect) {
	t.Helper()
	if !IsPostgres(location) {
		db, err := sqlx.Open("sqlite", dsn(location, false))
		if err != nil {
			t.Fatal(err)
		}
		return db, sqliteDialect{}
	}
	cfg, err := pgx.ParseConfig(location)
	if err != nil {
		t.Fatal(err)
	}
	return sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx"), postgresDialect{}
}

// suite is the ledger's behaviour that does not depend on the database:
// every test here runs against SQLite and PostgreSQL alike.
var suite = []struct {
	name string
	test func(*testing.T, backend)
}{
	{"MigratesFromEveryEarlierVersion", testMigratesFromEveryEarlierVersion},
	{"EveryColumnRoundTrips", testEveryColumnRoundTrips},
	{"CompareFlagsShedding", testCompareFlagsShedding},
	{"EveryFailureKindRoundTripsThroughTheLedger", testEveryFailureKindRoundTripsThroughTheLedger},
	{"RecordRejectsInvalidRows", testRecordRejectsInvalidRows},
	{"GetMissingIsNotFound", testGetMissingIsNotFound},
	{"OpenRefusesNewerSchema", testOpenRefusesNewerSchema},
	{"ReadOnlyOpenReadsAndCannotWrite", testReadOnlyOpenReadsAndCannotWrite},
	{"WhereOnLedgerWithRouterlessRows", testWhereOnLedgerWithRouterlessRows},
	{"StaleMarking", testStaleMarking},
	{"NameMeansTheMeasurement", testNameMeansTheMeasurement},
	{"ConcurrentWritersLoseNoRow", testConcurrentWritersLoseNoRow},
	{"SweepRowsDoNotMarkEachOther", testSweepRowsDoNotMarkEachOther},
	{"StaleOnlyWithinTheComparisonContext", testStaleOnlyWithinTheComparisonContext},
	{"VirtualRowsNeverMarkRealRows", testVirtualRowsNeverMarkRealRows},
	{"ReplicateGroupResult", testReplicateGroupResult},
	{"RecordChecksReplicateFields", testRecordChecksReplicateFields},
	{"ReplicatesNeverMarkEachOtherStale", testReplicatesNeverMarkEachOtherStale},
	{"CompareKnownAnswers", testCompareKnownAnswers},
	{"CompareSweepsAndResolutionErrors", testCompareSweepsAndResolutionErrors},
	{"CompareReplicateGroups", testCompareReplicateGroups},
	{"ParetoKnownFront", testParetoKnownFront},
	{"PrunedFrontEqualsFullFront", testPrunedFrontEqualsFullFront},
	{"ParetoUnderABound", testParetoUnderABound},
	{"ParetoReplicateGroups", testParetoReplicateGroups},
	{"PredictionPairs", testPredictionPairs},
	{"RecordSeqStreamsRecords", testRecordSeqStreamsRecords},
}

// TestLedgerSuite runs the suite once per backend.
func TestLedgerSuite(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) { c.test(t, b) })
			}
		})
	}
}
