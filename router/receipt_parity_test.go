package router

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// TestReceiptClockParity is issue 31's acceptance 5 for the policies that
// need no KV events: the recorded request sequence goes over HTTP to a
// router that reports receipts (WithReceipts), one request at a time after
// the loads are back to zero, and through Route on a second router of the
// same config and seed with receipts on. Both clocks give the same
// receipts — chosen worker, every candidate's load, scores and predicted
// hit — in the same order, and they carry scores (a policy's receipt that
// explained nothing would agree vacuously).
func TestReceiptClockParity(t *testing.T) {
	start := func() string {
		return simtest.StartStoppable(t, sim.Options{Engine: engine.Config{Model: simModel}}).URL
	}
	ws := []string{start(), start(), start()}
	cache := testConfig("cache_aware", ws...)
	cache.CacheThreshold = 0.1
	weighted := testConfig("weighted", ws...)
	weighted.Scorers = []Scorer{{Name: "prefix", Weight: 2}, {Name: "load", Weight: 1}}
	for name, cfg := range map[string]Config{"cache_aware": cache, "weighted": weighted} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var served []string
			live, err := New(cfg, WithSeed(9), WithReceipts(func(rr ReceiptRecord) {
				mu.Lock()
				defer mu.Unlock()
				served = append(served, receiptJSON(t, rr.Receipt))
			}))
			if err != nil {
				t.Fatal(err)
			}
			serveOneByOne(t, live)

			virt, err := New(cfg, WithSeed(9))
			if err != nil {
				t.Fatal(err)
			}
			virt.Receipts()
			var virtual []string
			for i, body := range parityPrompts() {
				x, err := virt.Route("/v1/completions", http.Header{}, []byte(body))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				virtual = append(virtual, receiptJSON(t, x.Receipt))
				x.End()
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(served, virtual) {
				t.Fatalf("receipts differ:\nreal    %v\nvirtual %v", served, virtual)
			}
			scored, predicted := 0, 0
			for _, s := range served {
				var rc Receipt
				if err := json.Unmarshal([]byte(s), &rc); err != nil {
					t.Fatal(err)
				}
				for _, c := range rc.Candidates {
					if c.Scores != nil {
						scored++
					}
					if c.Predicted != nil && *c.Predicted > 0 {
						predicted++
					}
				}
			}
			if scored == 0 || predicted == 0 {
				t.Fatalf("%d candidates scored, %d with a predicted hit, in %d receipts: want both > 0", scored, predicted, len(served))
			}
		})
	}
}

func receiptJSON(t *testing.T, rc *Receipt) string {
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
