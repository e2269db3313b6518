package driver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
)

// WithDuringWarmup's function starts after the ready check and before the
// warm-up ends, and no measured request is sent before it returns, also
// when it outlasts the warm-up.
func TestDuringWarmupPrecedesMeasuredRun(t *testing.T) {
	var mu sync.Mutex
	var log []string // what the server saw, in order
	warmupDone := make(chan struct{})
	var once sync.Once
	progress := func(p driver.Progress) {
		if p.Phase == "warmup" && p.Done == p.Total {
			once.Do(func() { close(warmupDone) })
		}
	}
	const warmup = 4
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		kind := "measured"
		if strings.HasSuffix(r.Header.Get("X-Run-ID"), driver.WarmupRunIDSuffix) {
			kind = "warmup"
		}
		if r.URL.Path == "/side" {
			kind = "side"
		}
		mu.Lock()
		if kind != "side" || !strings.HasSuffix(strings.Join(log, " "), "side") {
			log = append(log, kind)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"text":"a"}]}`+"\n\n"+`data: {"choices":[{"text":" b"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`+"\n\ndata: [DONE]\n\n")
	})
	sideRequest := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/side", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_ = resp.Body.Close()
	}
	side := func(ctx context.Context) {
		sideRequest(ctx)
		// Outlast the warm-up by a series of round trips: a measured
		// request sent meanwhile would show up among them.
		<-warmupDone
		for range 20 {
			sideRequest(ctx)
		}
		mu.Lock()
		log = append(log, "side-done")
		mu.Unlock()
	}
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 5, WarmupRequests: warmup, Seed: 1, RunID: "run",
		Workload: driver.Workload{Kind: "random", InputLen: 8, OutputLen: 2}}
	res, err := driver.Run(t.Context(), cfg, driver.WithDuringWarmup(side), driver.WithProgress(progress))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Completed != 5 {
		t.Fatalf("%d measured requests completed, want 5", res.Summary.Completed)
	}
	got := strings.Join(log, " ")
	// The ready check is the first warm-up request; the side request comes
	// after it, and every measured request after the side function ended.
	first, sideAt, doneAt := strings.Index(got, "warmup"), strings.Index(got, "side"), strings.Index(got, "side-done")
	if first != 0 || sideAt < 0 || doneAt < 0 || strings.Contains(got[:doneAt], "measured") ||
		strings.Count(got[doneAt:], "measured") != 5 {
		t.Errorf("server saw %q: want the ready check first, then the side request, and the measured requests only after side-done", got)
	}
}
