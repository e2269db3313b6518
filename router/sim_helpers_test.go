package router

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/scrape"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// Helpers for the acceptance tests of issues 3 and 4, which run against real
// simulated vLLM engines (collocated, prefill and decode, the latter two with
// their KV side channel) over the env's network: loopback TCP, or inside a
// synctest bubble its in-memory network, KV side channel included, where
// the tests of timer-driven behaviour (health checks marking a killed
// worker) run on the fake clock.

const simModel = "m"

// simWorker starts a simulated engine on the env's network, which a test
// can stop (killed) and restart on the same address.
func (e *env) simWorker(opts sim.Options) *simtest.Worker {
	e.t.Helper()
	opts.Engine.Model = simModel
	if e.net == nil {
		return simtest.StartStoppable(e.t, opts)
	}
	opts.KVNetwork = kvNetwork{e.net}
	return simtest.StartStoppableOn(e.t, e.net.Listen, opts)
}

// kvNetwork puts the engines' KV side channel on a bubble's network.
type kvNetwork struct{ *routertest.Network }

func (n kvNetwork) Listen(_, _ string) (net.Listener, error) { return n.Network.Listen("") }

func (e *env) simWorkers(n int) []*simtest.Worker {
	e.t.Helper()
	ws := make([]*simtest.Worker, n)
	for i := range ws {
		ws[i] = e.simWorker(sim.Options{})
	}
	return ws
}

func urls(ws []*simtest.Worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.URL
	}
	return out
}

func completion(prompt string, maxTokens int, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": simModel, "prompt": prompt, "max_tokens": maxTokens,
		"temperature": 0, "ignore_eos": true, "stream": stream})
	return string(b)
}

// fanOut runs n calls of f over c goroutines.
func fanOut(n, c int, f func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for i := range jobs {
				f(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// hangBound is how long a test request may take before it counts as hung: a
// failure bound far beyond any answer, not a latency threshold.
const hangBound = 30 * time.Second

// try POSTs body from any goroutine and reads the whole answer; a transport
// error or a cut body is in Response.Err, a hang shows as a deadline error.
func (e *env) try(url, body string, headers ...string) routertest.Response {
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	return <-e.Go(ctx, http.MethodPost, url, body, headers...)
}

func processedBy(r *Router, ws []*simtest.Worker) map[string]float64 {
	out := map[string]float64{}
	for _, w := range ws {
		out[w.URL] = testutil.ToFloat64(r.m.processed.WithLabelValues(w.URL))
	}
	return out
}

// workerStatus reads GET /workers for one worker.
func (e *env) workerStatus(base, url string) WorkerStatus {
	e.t.Helper()
	var list WorkersResponse
	if err := json.Unmarshal([]byte(e.Get(base+"/workers").Body), &list); err != nil {
		e.t.Fatal(err)
	}
	for _, w := range list.Workers {
		if w.URL == url {
			return w
		}
	}
	e.t.Fatalf("worker %s not listed", url)
	return WorkerStatus{}
}

func (e *env) pdSims(role sim.Role, n int, p sim.Profile) []*simtest.Worker {
	e.t.Helper()
	ws := make([]*simtest.Worker, n)
	for i := range ws {
		ws[i] = e.simWorker(sim.Options{Role: role, Profile: p})
	}
	return ws
}

func pdSimConfig(prefill, decode []*simtest.Worker, prefillPolicy, decodePolicy string) Config {
	c := pdTestConfig("nixl", urls(prefill), urls(decode))
	c.PrefillPolicy, c.DecodePolicy = prefillPolicy, decodePolicy
	return c
}

func (e *env) scrape(url string) scrape.Families {
	e.t.Helper()
	fams, err := scrape.Fetch(context.Background(), e.HTTP(), url+"/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	return fams
}

// simMetric sums a metric over the workers' own /metrics.
func (e *env) simMetric(ws []*simtest.Worker, name string, match map[string]string) float64 {
	e.t.Helper()
	var sum float64
	for _, w := range ws {
		sum += e.scrape(w.URL).Sum(name, match)
	}
	return sum
}

// usageCompletion is completion with usage in streams too (the prefill leg
// must drop stream_options; the decode leg keeps it).
func usageCompletion(prompt string, maxTokens int, stream bool) string {
	b := map[string]any{"model": simModel, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0, "ignore_eos": true, "stream": stream}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	raw, _ := json.Marshal(b)
	return string(raw)
}

// pdTiming has steps long enough to dominate scheduling noise and a
// transfer large enough to see in TTFT.
var pdTiming = sim.Profile{Name: "pd-timing", StepBaseMs: 4, PrefillUsPerToken: 20, DecodeUsPerSeq: 100,
	KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 20, NumGPUBlocks: 4096}

// streamTimed streams a completion and returns its text and when the first
// content chunk arrived, from the moment the request was sent.
func (e *env) streamTimed(url, body string) (string, time.Duration) {
	t := e.t
	t.Helper()
	start := time.Now()
	resp, err := e.Send(context.Background(), http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var text strings.Builder
	var first time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if len(c.Choices) == 0 {
			continue
		}
		if first == 0 {
			first = time.Since(start)
		}
		text.WriteString(c.Choices[0].Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return text.String(), first
}

func textOf(t *testing.T, body string) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("completion %q: %v", body, err)
	}
	return c.Choices[0].Text
}
