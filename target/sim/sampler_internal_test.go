package sim

import "testing"

// A greedy token is the first candidate of its position's full
// distribution, with and without precision flips (token skips the
// frame's stride when the position does not flip).
func TestGreedyTokenIsTheTopCandidate(t *testing.T) {
	t.Parallel()
	for _, prec := range []precision{{}, {flip: 0.3, noise: 0.05, salt: 7}} {
		flips := 0
		for key := range uint64(20) {
			s := sampling{key: key * 0x51ed, prec: prec}
			for pos := range 200 {
				var c [maxTopLogprobs]candidate
				if got, want := s.token(pos), c[s.dist(pos, &c)].id; got != want {
					t.Fatalf("flip %v key %d pos %d: token %d, top candidate %d", prec.flip, key, pos, got, want)
				}
				if s.head(pos).flip {
					flips++
				}
			}
		}
		if (prec.flip > 0) != (flips > 0) {
			t.Errorf("flip rate %v: %d positions flipped", prec.flip, flips)
		}
	}
}
