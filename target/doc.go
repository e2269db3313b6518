// Package target provisions inference workers for a topology and tears them
// down: simulated engines in-process (the default), static URLs, or local
// processes such as `vllm serve`.
package target
