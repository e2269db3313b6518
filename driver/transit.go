package driver

import (
	"net/http"
	"time"
)

// inTransit is a request sent on the virtual clock that has not reached
// the system yet (Config.HTTPInbound): the path from the client through
// the router to the engine's scheduler.
type inTransit struct {
	at     time.Duration // when it reaches the system (absolute)
	index  int
	header http.Header
	body   []byte
}

// transits orders requests in transit by arrival, then index, so equal
// arrivals reach the system in the driver's order.
type transits []inTransit

func (h transits) Len() int { return len(h) }
func (h transits) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].index < h[j].index)
}
func (h transits) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *transits) Push(x any)   { *h = append(*h, x.(inTransit)) }
func (h *transits) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
