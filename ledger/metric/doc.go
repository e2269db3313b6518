// Package metric is the one catalogue of the figures a trial produces:
// name, unit, direction and where the value is read. Every consumer asks
// it: `--assert` and `assert:`, `--baseline` and `baseline_metrics:`,
// `ledger pareto|compare|report` and `--bound`, and the trial output. A
// name means the same everywhere because it is one entry here; adding a
// figure is one line in the table (catalogue.go) next to its ledger
// column.
//
// The package imports nothing of autoinfer, so the spec model (trials),
// the ledger and the commands all use it without import cycles.
package metric
