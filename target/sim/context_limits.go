package sim

import engcfg "github.com/autoinfer/autoinfer/target/engine"

// ContextLimits returns the max_model_len and the KV cache capacity in
// tokens of an engine run with e on profile p, with the defaults the
// engine itself applies, so a caller can check a workload before starting
// one.
func ContextLimits(e engcfg.Config, p Profile) (maxModelLen, kvTokens int) {
	blocks := orDefault(e.NumGPUBlocksOverride, orDefault(p.NumGPUBlocks, defaultNumGPUBlocks))
	return orDefault(e.MaxModelLen, defaultMaxModelLen), blocks * orDefault(e.BlockSize, defaultBlockSize)
}
