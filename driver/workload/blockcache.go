package workload

// blockCache holds a trace's recent blocks in two generations of at most
// maxCachedBlocks/2 each: a block found in the older one moves to the
// newer one, and when the newer one is full the older one is dropped and
// the newer one becomes the older. The blocks live conversations keep
// reusing survive: emptying the whole cache when full made them again, a
// quarter of the tokens the Mooncake-scale trace generated (an eighth at
// the same bound now).
// Equal ids give equal text whether cached or not, so the cache changes
// no byte.
type blockCache struct {
	cur, old map[int]block
}

func (c *blockCache) get(id int) (block, bool) {
	if b, ok := c.cur[id]; ok {
		return b, true
	}
	b, ok := c.old[id]
	if ok {
		delete(c.old, id)
		c.put(id, b)
	}
	return b, ok
}

func (c *blockCache) put(id int, b block) {
	if c.cur == nil || len(c.cur) >= maxCachedBlocks/2 {
		c.old, c.cur = c.cur, map[int]block{}
	}
	c.cur[id] = b
}
