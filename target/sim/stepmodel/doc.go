// Package stepmodel is the calibrated step-time model of the simulated vLLM
// engine: how long one engine step takes on a given GPU for a given model,
// from measured per-operation GPU timings (microsoft/vidur's published
// profiling data, MIT licence, (c) Microsoft Corporation).
//
// A step's GPU time is, per transformer block, the linear layers at the
// step's total tokens (a compact table fitted to vidur's mlp.csv, or derived
// from the architecture and the GPU's datasheet with efficiencies fitted on
// the measured pairs), decode attention per sequence by its context, prefill
// attention per chunk by its size and cached prefix (fitted on vidur's
// measured A100 Llama-3-8B rows, scaled by bandwidth and FLOP/s), and with
// tensor parallelism two all-reduces (vidur's NCCL tables); plus the LM head.
//
// The tables in tables_gen.go and the rows in testdata/ are written by
// `autoinfer sim calibrate --vidur <bundle>`; the build and the tests never
// read the bundle. docs/sim.md describes the model, every profile and its
// measured error, and how to add a GPU or a model.
package stepmodel
