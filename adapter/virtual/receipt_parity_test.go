package virtual_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// kvEngine is the engine both clocks run: 48 blocks of 16 tokens (768), so the
// prompts below evict one another.
var kvEngine = engine.Config{Model: "sim-model", NumGPUBlocksOverride: 48, MaxModelLen: 512,
	ExtraArgs: map[string]string{"kv_events_config": `{"enable_kv_cache_events":true,"publisher":"zmq"}`}}

// kvPrompts are n completions of six 160-token shared prefixes, each with
// a 20-token suffix of its own.
func kvPrompts(n int) []string {
	r := rand.New(rand.NewPCG(5, 31))
	prefixes := make([]string, 6)
	for i := range prefixes {
		prefixes[i] = tokenizer.Generate(r, 160)
	}
	out := make([]string, n)
	for i := range out {
		b, _ := json.Marshal(map[string]any{"model": "sim-model", "max_tokens": 3, "ignore_eos": true,
			"prompt": prefixes[r.IntN(len(prefixes))] + " " + tokenizer.Generate(r, 20)})
		out[i] = string(b)
	}
	return out
}

// TestPreciseReceiptClockParity is issue 31's acceptance 5 for
// precise_prefix, which routes on the engines' KV events: the same
// request sequence goes over HTTP to a router subscribed to three
// simulated engines' ZMQ streams (each request after the previous one
// ended and the router applied every batch its worker published), and
// through a virtual deployment of the same engines, whose clock delivers
// the batches to the router's block index KVEventDelay after the engine
// flushed them. Both give the same receipts in the same order: chosen
// worker, each candidate's matched blocks and predicted tokens. On the
// virtual clock every candidate's predicted tokens also equal the tokens
// its engine really held (the receipt's held tokens), and the sequence
// exercises the index: some candidates are predicted hits, some requests
// go elsewhere than the first candidate.
func TestPreciseReceiptClockParity(t *testing.T) {
	prompts := kvPrompts(36)
	var urls []string
	var srcs []router.KVEventsSource
	var srvs []*simtest.Worker
	for range 3 {
		w := simtest.StartStoppable(t, sim.Options{Engine: kvEngine, KVEvents: kvevents.Config{EnableKVCacheEvents: true,
			Publisher: "zmq", Endpoint: "tcp://127.0.0.1:0", ReplayEndpoint: "tcp://127.0.0.1:0"}})
		events, replay, err := w.Server().KVEventsEndpoint(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		srvs, urls = append(srvs, w), append(urls, w.URL)
		srcs = append(srcs, router.KVEventsSource{Worker: w.URL, Endpoint: events, ReplayEndpoint: replay})
	}
	slices.Sort(urls)
	cfg := routerconfig.Default()
	cfg.Policy, cfg.WorkerURLs, cfg.CacheThreshold = "precise_prefix", urls, 0.2
	rc := router.Config(cfg)

	live := realReceipts(t, rc, srcs, srvs, prompts)
	virt := virtualReceipts(t, rc, prompts)
	if len(live) != len(prompts) || len(virt) != len(prompts) {
		t.Fatalf("%d real and %d virtual receipts for %d requests", len(live), len(virt), len(prompts))
	}
	hits, moved := 0, 0
	for i := range virt {
		for j, c := range virt[i].Candidates {
			if c.Held == nil || c.Predicted == nil || *c.Held != *c.Predicted {
				t.Errorf("request %d candidate %s: predicted %v, held %v: want equal (every batch delivered)", i, c.ID, c.Predicted, c.Held)
			}
			virt[i].Candidates[j].Held = nil // the HTTP router cannot see the engines
			if *c.Predicted > 0 {
				hits++
			}
		}
		if virt[i].Worker != virt[i].Candidates[0].ID {
			moved++
		}
		a, b := receiptString(t, live[i]), receiptString(t, virt[i])
		if a != b {
			t.Fatalf("request %d: receipts differ:\nreal    %s\nvirtual %s", i, a, b)
		}
	}
	if hits == 0 || moved == 0 {
		t.Fatalf("%d predicted hits, %d requests off the first candidate: the sequence does not exercise the index", hits, moved)
	}
}

// realReceipts sends prompts one at a time over HTTP through a router
// following srcs and returns the receipts it reported.
func realReceipts(t *testing.T, rc router.Config, srcs []router.KVEventsSource, srvs []*simtest.Worker, prompts []string) []*router.Receipt {
	t.Helper()
	rc.KVEvents = srcs
	var mu sync.Mutex
	var out []*router.Receipt
	r, err := router.New(rc, router.WithSeed(3), router.WithReceipts(func(rr router.ReceiptRecord) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, rr.Receipt)
	}))
	if err != nil {
		t.Fatal(err)
	}
	base := routertest.Serve(t, r)
	client := routertest.NewClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	defer cancel()
	settle := func() {
		for _, w := range srvs {
			if err := r.WaitKVEvents(ctx, w.URL, w.Server().KVEventsPublished()); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle()
	for i, body := range prompts {
		if res := client.Post(base+"/v1/completions", body); res.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, res.Status, res.Body)
		}
		settle()
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(out)
}

// virtualReceipts routes prompts one at a time through a virtual
// deployment of the same engines, each sent a second after everything of
// the previous one (answer and event batches) is done.
func virtualReceipts(t *testing.T, rc router.Config, prompts []string) []*router.Receipt {
	t.Helper()
	prof, err := sim.LookupProfile("fast") // simtest's
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]virtual.Worker, len(rc.WorkerURLs))
	for i, u := range rc.WorkerURLs {
		ws[i] = virtual.Worker{URL: u, Options: sim.Options{Engine: kvEngine, Profile: prof}}
	}
	d, err := virtual.New(ws, &rc, 3)
	if err != nil {
		t.Fatal(err)
	}
	d.RecordReceipts()
	var out []*router.Receipt
	d.RecordDecisions(func(dec virtual.Decision) { out = append(out, dec.Receipt) })
	now := time.Duration(0)
	for i, body := range prompts {
		if err := d.Send(i, "/v1/completions", http.Header{}, []byte(body), now); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		d.Plan()
		answered := false
		for at, ok := d.Next(); ok; at, ok = d.Next() {
			if err := d.Complete(at, func(driver.Answer) { answered = true }); err != nil {
				t.Fatal(err)
			}
			d.Plan()
			now = at
		}
		if !answered {
			t.Fatalf("request %d: no answer", i)
		}
		now += time.Second
	}
	return out
}

func receiptString(t *testing.T, rc *router.Receipt) string {
	t.Helper()
	if rc == nil {
		t.Fatal("no receipt")
	}
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
