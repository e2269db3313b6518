package policy

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/autoinfer/autoinfer/target/mixhash"
)

// VirtualNodes is how many points each target owns on the ring (vllm-router's
// 160, keyed "{id}:{i}").
const VirtualNodes = 160

// consistentHash places HashKey on a ring of virtual nodes built from the
// current candidates. Because the ring holds only healthy candidates, a key
// whose target became unhealthy lands on the next node clockwise: orphaned
// keys spread over all survivors instead of piling onto one worker, and keys
// of healthy targets never move.
type consistentHash struct {
	mu   sync.Mutex
	ring *ring // cached for the last candidate set
}

var (
	_ Policy = (*consistentHash)(nil)
	_ Needer = (*consistentHash)(nil)
)

func newConsistentHash() *consistentHash { return &consistentHash{} }

func (*consistentHash) Name() string { return ConsistentHash }

// Needs reports that consistent_hash places the request's hash key.
func (*consistentHash) Needs() Needs { return Needs{HashKey: true} }

func (p *consistentHash) Pick(req Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	r := p.ringFor(cands)
	id := r.lookup(Hash64(req.HashKey))
	for i, c := range cands {
		if c.ID == id {
			return Decision{Index: i}, true
		}
	}
	return Decision{Index: 0}, true // unreachable: the ring holds exactly cands
}

// ringFor returns the ring for cands, rebuilding it only when the set
// changed; the comparison allocates nothing.
func (p *consistentHash) ringFor(cands []Candidate) *ring {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ring == nil || !p.ring.holds(cands) {
		ids := make([]string, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		p.ring = newRing(ids)
	}
	return p.ring
}

type ring struct {
	ids    []string // the candidates it was built for, in order
	points []uint64
	owner  []string
}

func (r *ring) holds(cands []Candidate) bool {
	if len(r.ids) != len(cands) {
		return false
	}
	for i, c := range cands {
		if r.ids[i] != c.ID {
			return false
		}
	}
	return true
}

func newRing(ids []string) *ring {
	type point struct {
		h  uint64
		id string
	}
	pts := make([]point, 0, len(ids)*VirtualNodes)
	for _, id := range ids {
		for i := range VirtualNodes {
			pts = append(pts, point{Hash64(id + ":" + strconv.Itoa(i)), id})
		}
	}
	slices.SortFunc(pts, func(a, b point) int {
		if a.h != b.h {
			if a.h < b.h {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	r := &ring{ids: ids, points: make([]uint64, len(pts)), owner: make([]string, len(pts))}
	for i, pt := range pts {
		r.points[i], r.owner[i] = pt.h, pt.id
	}
	return r
}

// lookup returns the owner of the first point at or after h, wrapping.
func (r *ring) lookup(h uint64) string {
	i, _ := slices.BinarySearch(r.points, h)
	if i == len(r.points) {
		i = 0
	}
	return r.owner[i]
}

// Hash64 is the ring's hash: FNV-1a with a splitmix64 finaliser, because raw
// FNV of short, similar strings ("url:1", "url:2") clusters on the ring.
func Hash64(s string) uint64 { return mixhash.String(s) }
