// Package sweep finds a deployment's saturation point in one command, as
// guidellm's sweep profile does: a synchronous run (one request at a time)
// measures the lowest useful rate, a throughput run (everything at once)
// the highest, then Rates constant-rate runs spaced evenly between them.
// Every run sends the same seeded prompts; only the arrival differs. The
// knee is the highest rate whose share of requests meeting every goodput
// SLO is at least the attainment threshold.
package sweep
