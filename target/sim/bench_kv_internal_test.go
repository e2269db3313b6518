package sim

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkBlockPoolChurn is the prefix cache's work under a trace of long
// prompts that rarely share blocks (issue 30's Mooncake-scale run): 8
// ranks' pools of 31k blocks in turn admit a sequence of 750 fresh blocks
// in chunks of 512 (allocation evicting the oldest cached content, then
// registration once the next rank has allocated), a quarter of them first
// revive a cached 64-block prefix, and each rank releases its oldest
// sequence once 30 are resident. It reports nanoseconds per block.
func BenchmarkBlockPoolChurn(b *testing.B) {
	const ranks, blocks, seqLen, chunk, resident, prefix = 8, 31_000, 750, 512, 30, 64
	rnd := rand.New(rand.NewPCG(30, 1))
	pools := make([]*blockPool, ranks)
	live := make([][][]int32, ranks)
	for i := range pools {
		pools[i] = newBlockPool(blocks)
	}
	// The chunk allocated last, registered after the next allocation.
	var pending struct {
		p   *blockPool
		ids []int32
	}
	register := func() {
		for _, id := range pending.ids {
			pending.p.register(id, rnd.Uint64())
		}
		pending.ids = nil
	}
	var n int
	for b.Loop() {
		r := n % ranks
		p := pools[r]
		var s []int32
		if len(live[r]) == resident {
			s = live[r][0]
			p.releaseAll(s)
			live[r] = live[r][1:]
		}
		s = s[:0]
		if n%4 == 0 && len(live[r]) > 0 {
			for _, id := range live[r][len(live[r])-1][:prefix] {
				if p.blocks[id].cached() {
					p.acquire(id)
					s = append(s, id)
				}
			}
		}
		for len(s) < seqLen {
			k := min(chunk, seqLen-len(s))
			s = p.alloc(s, k)
			register()
			pending.p, pending.ids = p, s[len(s)-k:]
		}
		live[r] = append(live[r], s)
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*seqLen), "ns/block")
}
