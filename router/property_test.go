package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/router/routertest"
)

// ending is one way a request can end; the property test mixes them.
type ending struct {
	name string
	run  func(ctx context.Context, c *routertest.Client, base string) error
}

// complete sends a request and reads the whole answer; transport errors
// are expected for some endings and ignored.
func complete(ctx context.Context, c *routertest.Client, method, url, body string, headers ...string) error {
	resp, err := c.Send(ctx, method, url, body, headers...)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusInternalServerError && !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return fmt.Errorf("generic 500 from the router")
	}
	return nil
}

var endings = []ending{
	{"success", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"shared prefix a"}`)
	}},
	{"stream", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	}},
	{"4xx", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "400")
	}},
	{"5xx retried", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "503")
	}},
	{"validation 500", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Validation", "1")
	}},
	{"timeout", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "2000")
	}},
	{"cancel before headers", func(ctx context.Context, c *routertest.Client, b string) error {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "1000")
	}},
	{"cancel mid-stream", func(ctx context.Context, c *routertest.Client, b string) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := c.Send(ctx, "POST", b+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Hold", "1")
		if err != nil {
			return nil
		}
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
		cancel()
		resp.Body.Close()
		return nil
	}},
	{"worker breaks mid-stream", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Break", "1")
	}},
	{"pass-through", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/tokenize", `{"prompt":"x"}`)
	}},
	{"wrong method", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "GET", b+"/v1/completions", ``)
	}},
	{"bad json", func(ctx context.Context, c *routertest.Client, b string) error {
		return complete(ctx, c, "POST", b+"/v1/completions", `{"prompt"`)
	}},
}

// TestLoadsReturnToZeroProperty fires a random mix of every ending, under
// every policy, concurrently with workers being removed and re-added and a
// small in-flight limit that makes some requests queue or bounce — then
// asserts every load is exactly 0. It runs on a bubble's fake clock: the
// request and queue timeouts, the client's own timeout and the worker's
// sleeps end in the order their durations say, whatever the machine's load.
func TestLoadsReturnToZeroProperty(t *testing.T) {
	t.Parallel()
	const requests, concurrency = 120, 12
	for _, name := range policy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { loadsReturnToZero(t, name, requests, concurrency) })
		})
	}
}

func loadsReturnToZero(t *testing.T, policyName string, requests, concurrency int) {
	e := bubble(t)
	fakes := []*routertest.Worker{e.worker(), e.worker(), e.worker()}
	ws := urlsOf(fakes...)
	cfg := testConfig(policyName, ws...)
	cfg.RequestTimeoutSecs = 0.3
	cfg.Retry.MaxRetries = 3
	cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 8, 4, 0.2
	cfg.BalanceAbsThreshold = 2
	r, base := e.router(cfg)
	rnd := rand.New(rand.NewPCG(uint64(len(policyName)), 7))
	plan := make([]int, requests)
	for i := range plan {
		plan[i] = rnd.IntN(len(endings))
	}

	start := time.Now()
	ctx, stop := context.WithCancel(context.Background())
	var churn sync.WaitGroup
	var cycles int
	churn.Go(func() { // remove and re-add workers mid-traffic
		for ; ctx.Err() == nil; cycles++ {
			w := ws[cycles%len(ws)]
			r.Pool().Remove(w)
			time.Sleep(3 * time.Millisecond) // pacing the churn on the fake clock
			r.Pool().Add(w)
			time.Sleep(7 * time.Millisecond)
		}
	})
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range jobs {
				if err := endings[i].run(context.Background(), e.Client, base); err != nil {
					t.Errorf("%s: %v", endings[i].name, err)
				}
			}
		})
	}
	for _, i := range plan {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	stop()
	churn.Wait()
	synctest.Wait() // every handler has returned
	var reached int64
	for _, f := range fakes {
		reached += f.Requests.Load()
	}
	if cycles == 0 || reached == 0 {
		t.Fatalf("%d churn cycles, %d requests reached workers: the property was not exercised", cycles, reached)
	}
	t.Logf("%d requests reached workers during %d remove/re-add cycles over %v on the fake clock", reached, cycles, time.Since(start))
	for _, u := range ws {
		w := r.Pool().Get(u)
		for i := range w.ranks {
			if n := w.ranks[i].Load(); n != 0 {
				t.Errorf("%s rank %d load %d", u, i, n)
			}
		}
	}
	r.Pool().mu.RLock()
	defer r.Pool().mu.RUnlock()
	if n := len(r.Pool().draining); n != 0 {
		t.Errorf("%d removed workers still draining with no traffic", n)
	}
}
