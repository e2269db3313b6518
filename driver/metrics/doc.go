// Package metrics turns per-request records into the run summary, with the
// definitions and result keys of vllm bench serve (see docs/metrics.md):
// exact percentiles by linear interpolation over the raw values, as numpy
// computes them, and HDR histograms for live figures during a run.
package metrics
