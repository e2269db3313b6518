package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// hangBound is how long a request may take before it counts as hung: a
// failure bound far beyond any answer here, not a latency threshold.
const hangBound = 10 * time.Second

// TestReadyCheckOverlapsTheWarmup: the ready check's verdict is its status
// line, so the rest of the warm-up starts while the ready request still
// streams, and the measured phase starts only after that stream has ended.
// The server holds the ready request's stream open until another warm-up
// request has arrived: a driver that waited for the whole ready stream would
// never get there (the run would end on the request timeout).
func TestReadyCheckOverlapsTheWarmup(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	otherWarmup := make(chan struct{})
	var once sync.Once
	readyDone := false
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		warm := strings.HasSuffix(r.Header.Get(driver.DefaultRunIDHeader), driver.WarmupRunIDSuffix)
		mu.Lock()
		first := len(log) == 0
		if !warm && !readyDone {
			t.Errorf("a measured request arrived before the ready request's stream ended")
		}
		log = append(log, fmt.Sprint("warm=", warm))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n")
		w.(http.Flusher).Flush()
		switch {
		case first:
			select {
			case <-otherWarmup:
			case <-r.Context().Done():
				return
			}
		case warm:
			once.Do(func() { close(otherWarmup) })
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" b\"}]}\n\ndata: [DONE]\n\n")
		if first {
			mu.Lock()
			readyDone = true
			mu.Unlock()
		}
	})
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 4, WarmupRequests: 3, ReadyCheckTimeout: hangBound, Timeout: hangBound,
		RunID: "r", Workload: driver.Workload{Kind: "random", InputLen: 8, OutputLen: 2}}
	res, err := driver.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Completed != 4 || res.WarmupFailed != 0 {
		t.Fatalf("completed %d, warm-up failures %d; want 4 and 0", res.Summary.Completed, res.WarmupFailed)
	}
	if len(log) != 7 {
		t.Errorf("server saw %d requests, want 3 warm-up (the first doubling as the ready check) + 4 measured: %v", len(log), log)
	}
}
