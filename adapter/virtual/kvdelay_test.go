package virtual_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
)

// kvDeployment is policy pol over n engines publishing KV events.
func kvDeployment(t *testing.T, pol string, n int) *virtual.Deployment {
	t.Helper()
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	cfg := routerconfig.Default()
	cfg.Policy = pol
	var ws []virtual.Worker
	for i := range n {
		u := "http://virtual-" + string(rune('a'+i))
		ws = append(ws, virtual.Worker{URL: u, Options: sim.Options{Engine: kvEngine, Profile: prof}})
		cfg.WorkerURLs = append(cfg.WorkerURLs, u)
	}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 1)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runUntil completes every event of d up to until and returns the
// answers.
func runUntil(t *testing.T, d *virtual.Deployment, until time.Duration) []driver.Answer {
	t.Helper()
	var out []driver.Answer
	for at, ok := d.Next(); ok && at <= until; at, ok = d.Next() {
		if err := d.Complete(at, func(a driver.Answer) { out = append(out, a) }); err != nil {
			t.Fatal(err)
		}
		d.Plan()
	}
	return out
}

// The virtual clock delivers an engine's KV event batch to the router
// KVEventDelay after the engine flushed it, no sooner: a request routed at
// the instant the first request's prefill completed (its blocks just
// stored) is predicted no hit anywhere, while the engine already holds the
// prefix (its receipt's held tokens say so); the same request routed
// KVEventDelay later is predicted the hit and sent to that engine.
func TestKVEventsArriveAfterTheModelledDelay(t *testing.T) {
	body := []byte(kvPrompts(1)[0])
	first := func() *virtual.Deployment {
		d := kvDeployment(t, "precise_prefix", 2)
		d.RecordReceipts()
		if err := d.Send(0, "/v1/completions", http.Header{}, body, 0); err != nil {
			t.Fatal(err)
		}
		d.Plan()
		return d
	}
	// The prefill step's end: the first token's time.
	answers := runUntil(t, first(), time.Hour)
	if len(answers) != 1 || len(answers[0].Tokens) == 0 {
		t.Fatalf("answers %+v: want one with tokens", answers)
	}
	prefilled := answers[0].Tokens[0]

	second := func(at time.Duration) *router.Receipt {
		d := first()
		var got *router.Receipt
		d.RecordDecisions(func(dec virtual.Decision) { got = dec.Receipt })
		runUntil(t, d, at)
		if err := d.Send(1, "/v1/completions", http.Header{}, body, at); err != nil {
			t.Fatal(err)
		}
		return got
	}
	early, late := second(prefilled), second(prefilled+virtual.KVEventDelay)
	for i, c := range early.Candidates {
		if *c.Predicted != 0 {
			t.Errorf("at the flush: candidate %s predicted %d tokens before its events arrived, want 0", c.ID, *c.Predicted)
		}
		if i == 0 && *c.Held == 0 {
			t.Errorf("at the flush: %s holds nothing: the first request's prefill did not store its blocks", c.ID)
		}
	}
	if early.Worker == "http://virtual-a" {
		t.Errorf("at the flush: routed to %s, which the router could not know holds the prefix", early.Worker)
	}
	a := late.Candidates[0]
	if late.Worker != a.ID || *a.Predicted == 0 || *a.Predicted != *a.Held {
		t.Errorf("%v after the flush: receipt %+v: want %s chosen, predicted = held > 0", virtual.KVEventDelay, late, a.ID)
	}
}

// Recording receipts observes and changes nothing: the same seeded
// shared-prefix run through precise_prefix (KV events delivered) and
// through cache_aware gives byte-identical request records with receipts
// on and off, and with them on every decision carries a receipt.
func TestReceiptsChangeNoDecision(t *testing.T) {
	for _, pol := range []string{"precise_prefix", "cache_aware"} {
		run := func(receipts bool) ([]byte, int) {
			d := kvDeployment(t, pol, 3)
			n := 0
			if receipts {
				d.RecordReceipts()
				d.RecordDecisions(func(dec virtual.Decision) {
					if dec.Receipt != nil {
						n++
					}
				})
			}
			dc := sharedPrefix(3)
			dc.Workload.SystemPromptLen, dc.Arrival.RequestRate = 200, 200 // 48-block engines: evictions
			res, err := driver.Simulate(t.Context(), dc, d)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := metrics.WriteJSONL(&buf, res.Requests); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes(), n
		}
		off, _ := run(false)
		on, n := run(true)
		if !bytes.Equal(off, on) {
			t.Errorf("%s: records differ with receipts on", pol)
		}
		if n != 44 { // 4 warm-up and 40 measured requests
			t.Errorf("%s: %d decisions with a receipt, want 44", pol, n)
		}
	}
}

// Under prefill/decode every decision's receipt is the decode pool's: a
// random workload (whatever path a request takes into the deployment)
// through cache_aware decode and power_of_two prefill gives every
// decision a receipt naming its decode worker.
func TestPDDecisionsCarryReceipts(t *testing.T) {
	ws := append(workers(t, 2, sim.RolePrefill), workers(t, 2, sim.RoleDecode)...)
	cfg := routerconfig.Default()
	cfg.PDDisaggregation, cfg.KVConnector = true, "nixl"
	cfg.PrefillPolicy, cfg.DecodePolicy = "power_of_two", "cache_aware"
	cfg.PrefillURLs, cfg.DecodeURLs = []string{ws[0].URL, ws[1].URL}, []string{ws[2].URL, ws[3].URL}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 2)
	if err != nil {
		t.Fatal(err)
	}
	d.RecordReceipts()
	var decs []virtual.Decision
	d.RecordDecisions(func(dec virtual.Decision) { decs = append(decs, dec) })
	dc := driver.Config{BaseURL: "http://virtual:1", Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 2, WarmupRequests: -1,
		Workload: driver.Workload{Kind: "random", InputLen: 256, OutputLen: 8}, NumPrompts: 20, Arrival: driver.Arrival{RequestRate: 50}}
	if _, err := driver.Simulate(t.Context(), dc, d); err != nil {
		t.Fatal(err)
	}
	pd := 0
	for _, dec := range decs {
		if dec.Receipt == nil || dec.Receipt.Worker != dec.Worker.URL || len(dec.Receipt.Candidates) != 2 {
			t.Fatalf("decision %+v: want a receipt naming its decode worker among 2 candidates", dec)
		}
		if dec.PD {
			pd++
		}
	}
	if len(decs) < 20 || pd == 0 {
		t.Fatalf("%d decisions, %d with a prefill leg: want 20 or more, some PD", len(decs), pd)
	}
}
