// Package report renders ledger rows as one self-contained HTML page: the
// rows as a sortable table with each trial's identity, the Pareto front of
// any two metrics, per-trial TTFT/TPOT/E2EL distributions from the requests
// table, sweep curves (offered request rate against latency and goodput)
// with the knee marked, and bootstrap comparisons of trial pairs.
//
// Build gathers everything the page shows from the ledger into a Report,
// reusing the ledger's own queries (Compare for the bootstrap) and the
// driver's goodput definition; Render writes the page. Chart.js and its
// datalabels plugin (vendored from the npm registry, see
// assets/vendor/README.md) and the page's own script are inlined, so the
// file opens with no network. Every figure on the page comes from the
// Report's JSON, embedded in the page; the page computes only the Pareto
// front for the axes the reader picks, with the same rule as ledger.Pareto.
package report
