// Package ledger is the SQLite record of trials: one row per trial stamped
// with the engine, topology, router and workload that produced it, plus
// per-request records, with queries for Pareto fronts and comparisons.
package ledger
