package driver

// The HTTP path on the virtual clock: requests on their way to the system
// and answers on their way back, each a heap with a total order so equal
// times never depend on anything but the request indexes.

import (
	"net/http"
	"time"
)

// answer is a system's answer on its way back to the client (the HTTP
// path after the engine): the client has it at at.
type answer struct {
	at time.Duration
	a  Answer
}

// answers orders answers on their way back by arrival, then request id.
type answers []answer

func (h answers) Len() int { return len(h) }
func (h answers) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].a.ID < h[j].a.ID)
}
func (h answers) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *answers) Push(x any)   { *h = append(*h, x.(answer)) }
func (h *answers) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

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
