package sim

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkBlockPoolChurn is the prefix cache's work under a trace of long
// prompts that rarely share blocks (issue 30's Mooncake-scale run): 8
// ranks' pools of 31k blocks in turn admit a sequence of 750 fresh blocks
// (allocation evicting the oldest cached content, then registration), a
// quarter of them first revive a cached 64-block prefix, and each rank
// releases its oldest sequence once 30 are resident. It reports
// nanoseconds per block.
func BenchmarkBlockPoolChurn(b *testing.B) {
	const ranks, blocks, seqLen, resident, prefix = 8, 31_000, 750, 30, 64
	rnd := rand.New(rand.NewPCG(30, 1))
	pools := make([]*blockPool, ranks)
	live := make([][][]int32, ranks)
	for i := range pools {
		pools[i] = newBlockPool(blocks)
	}
	var n int
	for b.Loop() {
		r := n % ranks
		p := pools[r]
		if len(live[r]) == resident {
			s := live[r][0]
			for i := len(s) - 1; i >= 0; i-- {
				p.release(s[i])
			}
			live[r] = live[r][1:]
		}
		s := make([]int32, 0, seqLen)
		if n%4 == 0 && len(live[r]) > 0 {
			for _, id := range live[r][len(live[r])-1][:prefix] {
				if p.blocks[id].cached {
					p.acquire(id)
					s = append(s, id)
				}
			}
		}
		for len(s) < seqLen {
			id := p.alloc()
			p.register(id, rnd.Uint64())
			s = append(s, id)
		}
		live[r] = append(live[r], s)
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*seqLen), "ns/block")
}
