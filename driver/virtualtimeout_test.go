package driver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// countingSystem is paritySystem counting what reaches it.
type countingSystem struct {
	paritySystem
	sent int
}

func (s *countingSystem) Send(id int, route string, h http.Header, body []byte, at time.Duration) error {
	s.sent++
	return s.paritySystem.Send(id, route, h, body, at)
}

// TestVirtualTimeoutInTransit: a request whose timeout passes before it
// reaches the system (http_inbound_ms past the timeout) is a timeout at
// send + timeout and never reaches the system; one that arrives in time is
// answered.
func TestVirtualTimeoutInTransit(t *testing.T) {
	for _, c := range []struct {
		inbound time.Duration
		want    string
		sent    int
	}{{400 * time.Millisecond, "timeout", 0}, {100 * time.Millisecond, "success", 4}} {
		sys := &countingSystem{}
		cfg := parityConfig("http://virtual.invalid:1")
		cfg.HTTPOverhead, cfg.HTTPInbound = c.inbound, c.inbound
		cfg.Workload = driver.Workload{Kind: "random", InputLen: 8, OutputLen: 4, RequestIDPrefix: "p-"}
		cfg.NumPrompts, cfg.Arrival = 4, driver.Arrival{Kind: "constant", RequestRate: 2} // the run goes on past each arrival
		res, err := driver.Simulate(context.Background(), cfg, sys)
		if err != nil {
			t.Fatal(err)
		}
		if sys.sent != c.sent {
			t.Errorf("inbound %v: %d requests reached the system, want %d", c.inbound, sys.sent, c.sent)
		}
		for _, r := range res.Requests {
			if got := parityStatus(r); got != c.want || !r.Sent {
				t.Errorf("inbound %v: request %d %s (sent %v), want %s", c.inbound, r.Index, got, r.Sent, c.want)
			}
		}
		if c.want == "timeout" {
			// The run ends when the last request gives up, 300 ms after it left.
			if d, want := res.Summary.Duration, (res.Requests[3].SendMs+300)/1000; d != want {
				t.Errorf("inbound %v: duration %v s, want %v (the last timeout)", c.inbound, d, want)
			}
		}
	}
}
