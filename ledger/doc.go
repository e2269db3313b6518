// Package ledger is the record of trials: one row per trial stamped with
// the engine, topology, router and workload that produced it, plus
// per-request records, with queries for Pareto fronts and comparisons. A
// ledger is a SQLite file, or a PostgreSQL database a team shares
// (a postgres:// location); the schema, migrations and queries are written
// once and a dialect holds what differs (dialect.go, postgres.go).
//
// Rows are written by Record in one transaction together with their
// per-request records and the stale marks they cause (package stale), so a
// process killed mid-write leaves no partial row; writers on many machines
// queue on one lock, so their marks are a serial run's. The schema is
// created and upgraded by numbered migrations on Open; Copy moves rows
// between ledgers (ledger push, pull). docs/ledger.md documents every
// column for people querying the ledger with sqlite3 or psql.
package ledger
