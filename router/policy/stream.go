package policy

import "github.com/autoinfer/autoinfer/target/mixhash"

// NewStream returns the random stream of one part of a router (a pool's
// policy, the retry jitter), seeded from the router's seed and the part's
// name. Each part draws from its own stream, so a draw in one (a retry's
// jitter, a pick in the prefill pool) never shifts another's sequence, and
// adding a draw somewhere changes nothing elsewhere.
func NewStream(seed uint64, name string) *LockedRand {
	return NewLockedRand(mixhash.Mix64(seed ^ mixhash.String(name)))
}
