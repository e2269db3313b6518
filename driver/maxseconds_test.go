package driver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
)

// TestMaxSecondsStopsTheRun: with max_seconds the run stops sending when
// the bound passes; the requests it never sent are not_sent and those in
// flight (held by the server until the client goes) incomplete, and none
// of them counts as failed.
func TestMaxSecondsStopsTheRun(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		// The server notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Request-Id") == "t-0" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"ok\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		<-r.Context().Done() // held until the run stops
	})
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 40, WarmupRequests: -1, ReadyCheckTimeout: -1,
		Arrival:  driver.Arrival{Kind: "constant", RequestRate: 20},
		Workload: driver.Workload{Kind: "random", InputLen: 4, OutputLen: 1, MaxSeconds: 0.2, RequestIDPrefix: "t-"}}
	res, err := driver.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Completed != 1 || s.Failed != 0 || s.Incomplete == 0 || s.NotSent == 0 || s.Completed+s.Incomplete+s.NotSent != 40 {
		t.Fatalf("completed %d, failed %d, incomplete %d, not_sent %d; want 1, 0, some, some (40 in all)", s.Completed, s.Failed, s.Incomplete, s.NotSent)
	}
	for _, r := range res.Requests {
		if r.ErrorType == driver.ErrIncomplete && !r.Sent || r.ErrorType == driver.ErrNotSent && r.Sent {
			t.Errorf("request %d: sent %v but %s", r.Index, r.Sent, r.ErrorType)
		}
	}
}
