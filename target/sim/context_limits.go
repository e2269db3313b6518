package sim

import engcfg "github.com/autoinfer/autoinfer/target/engine"

// ContextLimits returns the max_model_len and the KV cache capacity in
// tokens of an engine run with e on profile p, with the defaults the
// engine itself applies, so a caller can check a workload before starting
// one.
// The KV capacity follows the engine's weight and KV precision as the
// engine sizes it (an engine that cannot start reports why when it does).
func ContextLimits(e engcfg.Config, p Profile) (maxModelLen, kvTokens int) {
	c := config{maxNumSeqs: orDefault(e.MaxNumSeqs, orDefault(p.MaxNumSeqs, defaultMaxNumSeqs)),
		maxBatched: orDefault(e.MaxNumBatchedTokens, orDefault(p.MaxNumBatchedTokens, defaultMaxBatched)),
		blockSize:  orDefault(e.BlockSize, defaultBlockSize), profile: p}
	if err := c.applyModel(e); err != nil {
		c.profile = p
	}
	blocks := orDefault(e.NumGPUBlocksOverride, orDefault(c.profile.NumGPUBlocks, defaultNumGPUBlocks))
	return orDefault(e.MaxModelLen, defaultMaxModelLen), blocks * c.blockSize
}
