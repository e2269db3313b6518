// Package search evaluates a space of deployment configurations on the
// virtual clock (autoinfer search, docs/whatif.md): a spec's `search:` block
// names the space (spec keys to lists or ranges, and linked variants, which
// become the spec's matrix and variants), constraints (a GPU budget the
// candidates must use exactly, SLO bounds) and an objective (one metric to
// maximise or minimise, or a Pareto front of two). Every candidate runs as
// a virtual trial of one sweep, the search id, in parallel across cores and
// is recorded as a virtual ledger row; an interrupted search resumes from
// the rows it already has.
package search
