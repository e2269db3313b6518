package router

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
)

// ending is one way a request can end; the property test mixes them.
type ending struct {
	name string
	run  func(ctx context.Context, base string) error
}

func send(ctx context.Context, method, url, body string, headers ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return http.DefaultClient.Do(req)
}

// complete sends a request and reads the whole answer; transport errors
// are expected for some endings and ignored.
func complete(ctx context.Context, method, url, body string, headers ...string) error {
	resp, err := send(ctx, method, url, body, headers...)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	_, _ = bufio.NewReader(resp.Body).WriteTo(discard{})
	if resp.StatusCode == http.StatusInternalServerError && !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return fmt.Errorf("generic 500 from the router")
	}
	return nil
}

var endings = []ending{
	{"success", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"shared prefix a"}`)
	}},
	{"stream", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	}},
	{"4xx", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "400")
	}},
	{"5xx retried", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "503")
	}},
	{"validation 500", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Validation", "1")
	}},
	{"timeout", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "2000")
	}},
	{"cancel before headers", func(ctx context.Context, b string) error {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "1000")
	}},
	{"cancel mid-stream", func(ctx context.Context, b string) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := send(ctx, "POST", b+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Hold", "1")
		if err != nil {
			return nil
		}
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
		cancel()
		resp.Body.Close()
		return nil
	}},
	{"worker breaks mid-stream", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Break", "1")
	}},
	{"pass-through", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/tokenize", `{"prompt":"x"}`)
	}},
	{"wrong method", func(ctx context.Context, b string) error {
		return complete(ctx, "GET", b+"/v1/completions", ``)
	}},
	{"bad json", func(ctx context.Context, b string) error {
		return complete(ctx, "POST", b+"/v1/completions", `{"prompt"`)
	}},
}

// TestLoadsReturnToZeroProperty fires a random mix of every ending, under
// every policy, concurrently with workers being removed and re-added and a
// small in-flight limit that makes some requests queue or bounce — then
// asserts every load is exactly 0.
func TestLoadsReturnToZeroProperty(t *testing.T) {
	const requests, concurrency = 120, 12
	for _, name := range policy.Names() {
		t.Run(name, func(t *testing.T) {
			ws := []*fakeWorker{newFakeWorker(t), newFakeWorker(t), newFakeWorker(t)}
			cfg := testConfig(name, ws[0].URL, ws[1].URL, ws[2].URL)
			cfg.RequestTimeoutSecs = 0.3
			cfg.Retry.MaxRetries = 3
			cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 8, 4, 0.2
			cfg.BalanceAbsThreshold = 2
			r, base := startRouter(t, cfg)
			rnd := rand.New(rand.NewPCG(uint64(len(name)), 7))
			plan := make([]int, requests)
			for i := range plan {
				plan[i] = rnd.IntN(len(endings))
			}

			ctx, stop := context.WithCancel(context.Background())
			var churn sync.WaitGroup
			churn.Go(func() { // remove and re-add workers mid-traffic
				for i := 0; ctx.Err() == nil; i++ {
					w := ws[i%len(ws)].URL
					r.Pool().Remove(w)
					time.Sleep(3 * time.Millisecond) // pacing the churn, not synchronisation
					r.Pool().Add(w)
					time.Sleep(7 * time.Millisecond)
				}
			})
			jobs := make(chan int)
			var wg sync.WaitGroup
			for range concurrency {
				wg.Go(func() {
					for e := range jobs {
						if err := endings[e].run(context.Background(), base); err != nil {
							t.Errorf("%s: %v", endings[e].name, err)
						}
					}
				})
			}
			for _, e := range plan {
				jobs <- e
			}
			close(jobs)
			wg.Wait()
			stop()
			churn.Wait()
			waitLoadsZero(t, r)
			for _, w := range ws {
				for i := range 1 {
					if n := r.Pool().Get(w.URL).ranks[i].Load(); n != 0 {
						t.Errorf("%s rank %d load %d", w.URL, i, n)
					}
				}
			}
			if n := len(r.Pool().draining); n != 0 {
				t.Errorf("%d removed workers still draining with no traffic", n)
			}
		})
	}
}
