package virtual_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
)

// heldProbe remembers the text the router's index keys the prompt under
// way by (its prompt, as the HTTP path extracts it from a completions
// body), on the token path or the text path.
type heldProbe struct {
	*virtual.Deployment
	text *string
}

func (h heldProbe) SendPrompt(id int, route string, header http.Header, pr driver.Prompt, at time.Duration) error {
	*h.text = pr.Text()
	return h.Deployment.SendPrompt(id, route, header, pr, at)
}

func (h heldProbe) Send(id int, route string, header http.Header, body []byte, at time.Duration) error {
	var b struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	*h.text = b.Prompt
	return h.Deployment.Send(id, route, header, body, at)
}

// TestEngineHeldMatchesIndex checks that a receipt's held tokens, which
// the engines now count themselves (sim.HeldPrompt: their own block
// hashes against their GPU caches' index), are what the router-side index
// of their caches (fed by their KV events at the instant they happen,
// keyed by the prompt's text) reported for every candidate of every
// receipt: on a Mooncake-format trace with shared hash_ids, over engines
// small enough to evict, under cache_aware and round_robin, on the token
// path and the text path (bodies), with two ranks per engine (the router
// seeing a worker as one or addressing its ranks) and under
// prefill/decode (the decode candidates). Both are computed in the same run; the
// figures vary (some candidates hold some of a prompt, others none), so
// the comparison can fail.
func TestEngineHeldMatchesIndex(t *testing.T) {
	trace := tokenTrace(t, 90)
	dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 11,
		WarmupRequests: 2, Workload: driver.Workload{Kind: "trace", Path: trace, BlockSize: 16}}
	type variant struct {
		policy        string
		body          bool // the text path
		engineDP, rDP int  // engine ranks per worker; ranks the router addresses
		pd            bool // two prefill, two decode workers: the receipt's candidates decode
	}
	var cases []variant
	for _, pol := range []string{"cache_aware", "round_robin"} {
		cases = append(cases, variant{pol, false, 1, 1, false}, variant{pol, true, 1, 1, false})
	}
	// Two ranks per engine: held by any rank when the router sees a worker
	// as one (one event stream), by the rank when it addresses ranks.
	cases = append(cases, variant{"round_robin", false, 2, 1, false}, variant{"round_robin", false, 2, 2, false},
		variant{"cache_aware", false, 1, 1, true})
	for _, c := range cases {
		{
			name := fmt.Sprintf("%s/token_path/dp%d-%d/pd=%t", c.policy, c.engineDP, c.rDP, c.pd)
			if c.body {
				name = fmt.Sprintf("%s/text_path/dp%d-%d/pd=%t", c.policy, c.engineDP, c.rDP, c.pd)
			}
			t.Run(name, func(t *testing.T) {
				ws, rc := collocatedUnder(t, c.policy)
				if c.pd {
					ws = append(workers(t, 2, sim.RolePrefill), workers(t, 2, sim.RoleDecode)...)
					cfg := routerconfig.Default()
					cfg.PDDisaggregation, cfg.KVConnector = true, "nixl"
					cfg.PrefillPolicy, cfg.DecodePolicy = "power_of_two", c.policy
					cfg.PrefillURLs, cfg.DecodeURLs = []string{ws[0].URL, ws[1].URL}, []string{ws[2].URL, ws[3].URL}
					r := router.Config(cfg)
					rc = &r
				}
				for i := range ws { // 20 blocks of 16: the trace's six conversations evict one another
					e := &ws[i].Options.Engine
					e.NumGPUBlocksOverride, e.MaxModelLen, e.DataParallelSize = 20, 256, c.engineDP
				}
				rc.IntraNodeDataParallelSize = c.rDP
				d, err := virtual.New(ws, rc, 3)
				if err != nil {
					t.Fatal(err)
				}
				d.RecordReceipts()
				idx := policy.NewBlockIndex()
				d.FeedIndex(idx)
				var text string
				var receipts, held, none int
				d.RecordDecisions(func(x virtual.Decision) {
					if x.Receipt == nil {
						t.Errorf("request %d: no receipt", x.ID)
						return
					}
					want := router.Receipt{Candidates: slices.Clone(x.Receipt.Candidates)}
					want.SetHeld(idx, text)
					receipts++
					for i, c := range x.Receipt.Candidates {
						if c.Held == nil || *c.Held != *want.Candidates[i].Held {
							t.Errorf("request %d candidate %s: the engine holds %v tokens, the index %d", x.ID, c.ID, c.Held, *want.Candidates[i].Held)
							continue
						}
						if *c.Held > 0 {
							held++
						} else {
							none++
						}
					}
				})
				var sys driver.System = heldProbe{d, &text}
				if c.body {
					sys = textPath{heldProbe{d, &text}, d}
				}
				if _, err := driver.SimulateWith(context.Background(), dc, sys, driver.SimOptions{Stream: true}); err != nil {
					t.Fatal(err)
				}
				if receipts < 90 || held == 0 || none == 0 {
					t.Fatalf("%d receipts, %d candidates holding part of the prompt, %d holding none: want 90+ receipts and both kinds", receipts, held, none)
				}
				t.Logf("%d receipts: %d candidates hold part of the prompt, %d none", receipts, held, none)
			})
		}
	}
}
