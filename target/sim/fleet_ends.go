package sim

import "time"

// stepEnd is when a fleet rank's running step completes, in virtual time
// since the fleet's start (a rank has one running step at most).
type stepEnd struct {
	at   time.Duration
	rank int
}

// stepEnds is a min-heap of the running steps' ends, by time and then
// rank: a total order, so steps ending at one instant complete in rank
// order whatever the heap's shape. It is typed, with plain durations, as
// it is pushed and popped once per engine step: container/heap boxed each
// entry in an interface, and time.Time comparisons cost more than ints.
type stepEnds []stepEnd

func (h stepEnds) less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].rank < h[j].rank)
}

func (h *stepEnds) push(e stepEnd) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

// pop removes and returns the earliest end; the heap is not empty.
func (h *stepEnds) pop() stepEnd {
	q := *h
	top, n := q[0], len(q)-1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
