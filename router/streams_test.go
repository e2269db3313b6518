package router

import (
	"slices"
	"testing"

	"github.com/autoinfer/autoinfer/router/policy"
)

// A pool's policy and the retry jitter draw from streams of their own,
// derived from the router's seed: retries' jitter draws and another pool's
// picks leave a pool's power_of_two picks where they were, and two pools
// do not pick in lockstep.
func TestPoolStreamsAreIndependent(t *testing.T) {
	t.Parallel()
	cands := []policy.Candidate{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}
	picks := func(p policy.Policy) []int {
		var out []int
		for range 64 {
			d, _ := p.Pick(policy.Request{}, cands)
			out = append(out, d.Index)
		}
		return out
	}
	build := func() *Router {
		r, err := New(testConfig(policy.PowerOfTwo, "http://127.0.0.1:1"), WithSeed(7))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	alone := picks(build().pool.policy)

	r := build()
	for range 100 {
		r.rnd.Float64() // retries' jitter
	}
	other, err := r.NewPolicy(policy.PowerOfTwo) // a second pool, as PD builds
	if err != nil {
		t.Fatal(err)
	}
	otherPicks := picks(other)
	if got := picks(r.pool.policy); !slices.Equal(got, alone) {
		t.Errorf("retry jitter and another pool shifted the default pool's picks:\n%v\nwant\n%v", got, alone)
	}
	if slices.Equal(otherPicks, alone) {
		t.Error("two pools pick in lockstep: their streams are not independent")
	}
}
