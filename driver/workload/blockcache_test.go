package workload

import "testing"

// The block cache never holds more than maxCachedBlocks, and a block in use
// all along survives any number of new blocks passing through it.
func TestBlockCacheKeepsReusedBlocks(t *testing.T) {
	var c blockCache
	c.put(-1, block{text: "kept"})
	for id := range 3 * maxCachedBlocks {
		if id%(maxCachedBlocks/4) == 0 {
			if b, ok := c.get(-1); !ok || b.text != "kept" {
				t.Fatalf("after %d new blocks the reused block is gone", id)
			}
		}
		c.put(id, block{text: "new"})
		if n := len(c.cur) + len(c.old); n > maxCachedBlocks {
			t.Fatalf("%d blocks cached, bound %d", n, maxCachedBlocks)
		}
	}
	if _, ok := c.get(0); ok {
		t.Fatal("the first new block, never reused, is still cached: the cache does not bound itself")
	}
}
