package virtual_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
)

// Blind prompts under prefill/decode: with no routing_threshold and
// policies that read no prompt (power_of_two prefilling, round_robin
// decoding; the router's own policy stays the default cache_aware, which
// picks nothing under PD and so reads nothing), both legs of every request take its full blocks blind, the
// decode engine pulling the prefill engine's KV as for a drawn prompt,
// and the records, decisions and hashes are the text path's.
func TestBlindPathParityPrefillDecode(t *testing.T) {
	trace := tokenTrace(t, 90)
	dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 11,
		WarmupRequests: 2, Workload: driver.Workload{Kind: "trace", Path: trace, BlockSize: 16}}
	ws := append(workers(t, 2, sim.RolePrefill), workers(t, 2, sim.RoleDecode)...)
	cfg := routerconfig.Default()
	cfg.PDDisaggregation, cfg.KVConnector = true, "nixl"
	cfg.PrefillPolicy, cfg.DecodePolicy = "power_of_two", "round_robin"
	cfg.PrefillURLs, cfg.DecodeURLs = []string{ws[0].URL, ws[1].URL}, []string{ws[2].URL, ws[3].URL}
	rc := router.Config(cfg)
	var blind, prompts int
	recs, decs, sum, _ := tokenRun(t, ws, &rc, dc, true, func(d *virtual.Deployment) driver.System { return blindCount{d, &blind, &prompts} })
	if blind != sum.Completed || blind == 0 {
		t.Fatalf("%d of %d prompts came blind, %d completed: want all of them", blind, prompts, sum.Completed)
	}
	want, wantDecs, wantSum, _ := tokenRun(t, ws, &rc, dc, true, func(d *virtual.Deployment) driver.System { return textPath{d, d} })
	if !bytes.Equal(recs, want) {
		t.Fatalf("the blind path's records differ from the text path's: %s", firstDiff(recs, want))
	}
	pd := 0
	for _, x := range decs {
		if x.PD {
			pd++
		}
	}
	if fmt.Sprint(decs) != fmt.Sprint(wantDecs) || pd != len(decs) || pd == 0 {
		t.Fatalf("%d routing decisions (%d with a prefill hop) on the blind path, %d on the text path, or they differ", len(decs), pd, len(wantDecs))
	}
	if sum.StreamHash != wantSum.StreamHash || sum.SentHash != wantSum.SentHash {
		t.Fatalf("stream %s sent %s; text path: stream %s sent %s", sum.StreamHash, sum.SentHash, wantSum.StreamHash, wantSum.SentHash)
	}
}
