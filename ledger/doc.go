// Package ledger is the SQLite record of trials: one row per trial stamped
// with the engine, topology, router and workload that produced it, plus
// per-request records, with queries for Pareto fronts and comparisons.
//
// Rows are written by Record in one transaction together with their
// per-request records and the stale marks they cause (package stale), so a
// process killed mid-write leaves no partial row. The schema is created and
// upgraded by numbered migrations on Open; docs/ledger.md documents every
// column for people querying the file with sqlite3.
package ledger
