package driver

// ordered is a value with a total order: before breaks every tie (by
// request index), so a heap of them pops in one order whatever the order
// of pushes.
type ordered[T any] interface{ before(T) bool }

// minHeap is a binary min-heap under T's order: the phase's pending
// requests and the virtual clock's requests and answers on their way.
// Unlike container/heap it does not box its values, so a push allocates
// nothing beyond the slice.
type minHeap[T ordered[T]] []T

func (h minHeap[T]) Len() int { return len(h) }

func (h *minHeap[T]) push(x T) {
	*h = append(*h, x)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if !s[j].before(s[i]) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

func (h *minHeap[T]) pop() T {
	s := *h
	n := len(s) - 1
	s[0], s[n] = s[n], s[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if k := j + 1; k < n && s[k].before(s[j]) {
			j = k
		}
		if !s[j].before(s[i]) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	x := s[n]
	*h = s[:n]
	return x
}
