package driver

// The HTTP path on the virtual clock: requests on their way to the system
// and answers on their way back, each ordered totally (minHeap) so equal
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

// before orders answers on their way back by arrival, then request id.
func (x answer) before(y answer) bool { return x.at < y.at || x.at == y.at && x.a.ID < y.a.ID }

// inTransit is a request sent on the virtual clock that has not reached
// the system yet (Config.HTTPInbound): the path from the client through
// the router to the engine's scheduler.
type inTransit struct {
	at     time.Duration // when it reaches the system (absolute)
	index  int
	header http.Header
	body   []byte
}

// before orders requests in transit by arrival, then index, so equal
// arrivals reach the system in the driver's order.
func (x inTransit) before(y inTransit) bool { return x.at < y.at || x.at == y.at && x.index < y.index }
