package router

import (
	"net/http"
	"net/textproto"
	"testing"
)

// Generated request ids are unique within a router and across routers;
// a client's own id is kept.
func TestRequestIDs(t *testing.T) {
	a, b := newRequestIDs(), newRequestIDs()
	names := []string{"X-Request-Id", "X-Correlation-Id"}
	seen := map[string]bool{}
	for range 1000 {
		for _, g := range []*requestIDs{a, b} {
			id := g.of(http.Header{}, names)
			if seen[id] || len(id) < len("req-")+16 {
				t.Fatalf("id %q repeated or short", id)
			}
			seen[id] = true
		}
	}
	h := http.Header{}
	h.Set("X-Correlation-Id", "mine")
	if id := a.of(h, names); id != "mine" {
		t.Errorf("client id replaced by %q", id)
	}
}

// runIDKey is what http.Header.Get(RunIDHeader) looks up.
func TestRunIDKeyIsCanonical(t *testing.T) {
	if got := textproto.CanonicalMIMEHeaderKey(RunIDHeader); got != runIDKey {
		t.Fatalf("canonical %s is %q, runIDKey %q", RunIDHeader, got, runIDKey)
	}
}
