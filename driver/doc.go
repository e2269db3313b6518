// Package driver generates seeded, byte-reproducible request streams, sends
// them on an arrival schedule and measures them exactly as vllm bench serve
// does (TTFT, ITL, TPOT, E2EL, throughputs, goodput).
package driver
