package virtual_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
)

// blindCount is the token path, counting the prompts that came with a
// blind span (tokenizer.Span.Blind) and those that came at all.
type blindCount struct {
	*virtual.Deployment
	blind, prompts *int
}

func (b blindCount) SendPrompt(id int, route string, header http.Header, pr driver.Prompt, at time.Duration) error {
	*b.prompts++
	for _, s := range pr.Spans {
		if s.Blind != 0 {
			*b.blind++
			break
		}
	}
	return b.Deployment.SendPrompt(id, route, header, pr, at)
}

// TestBlindPathParity is the clock-parity test for blind prompts (issue 30
// item 1: no prompt text in virtual time): on a Mooncake-format trace with
// shared hash_ids, under policies that read no prompt (round_robin,
// power_of_two), the driver sends every prompt's full blocks blind (named
// by their keys, never drawn), and the request records (every TTFT and
// ITL, so TPOT and E2E, cached tokens), routing decisions and stream and
// sent hashes are those of the text path (bodies the engines parse and
// tokenize), on streamed runs (the lazy source: a stream built whole draws
// its bodies anyway, so it sends no blind prompt). A policy that reads the text (cache_aware) and a run without
// ignore_eos never get a blind prompt.
func TestBlindPathParity(t *testing.T) {
	trace := tokenTrace(t, 90)
	dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 11,
		WarmupRequests: 2, Workload: driver.Workload{Kind: "trace", Path: trace, BlockSize: 16}}
	var blind, prompts int
	counting := func(d *virtual.Deployment) driver.System { return blindCount{d, &blind, &prompts} }
	text := func(d *virtual.Deployment) driver.System { return textPath{d, d} }
	for _, policy := range []string{"round_robin", "power_of_two"} {
		t.Run(policy, func(t *testing.T) {
			ws, rc := collocatedUnder(t, policy)
			blind, prompts = 0, 0
			recs, decs, sum, hits := tokenRun(t, ws, rc, dc, true, counting)
			if blind != sum.Completed || blind == 0 {
				t.Fatalf("%d of %d prompts came blind, %d completed: want all of them", blind, prompts, sum.Completed)
			}
			want, wantDecs, wantSum, _ := tokenRun(t, ws, rc, dc, true, text)
			if !bytes.Equal(recs, want) {
				t.Fatalf("the blind path's records differ from the text path's: %s", firstDiff(recs, want))
			}
			if fmt.Sprint(decs) != fmt.Sprint(wantDecs) || len(decs) == 0 {
				t.Fatalf("%d routing decisions on the blind path, %d on the text path, or they differ", len(decs), len(wantDecs))
			}
			if sum.StreamHash != wantSum.StreamHash || sum.SentHash != wantSum.SentHash {
				t.Fatalf("stream %s sent %s; text path: stream %s sent %s", sum.StreamHash, sum.SentHash, wantSum.StreamHash, wantSum.SentHash)
			}
			if hits < 0.2 {
				t.Fatalf("%.2f of prompt tokens hit the prefix cache: the trace must share prefixes for the parity to say anything", hits)
			}
		})
	}
	sighted := dc
	sighted.Workload.IgnoreEOS = new(bool)
	for _, c := range []struct {
		name   string
		policy string
		dc     driver.Config
	}{{"cache_aware", "cache_aware", dc}, {"no ignore_eos", "round_robin", sighted}} {
		t.Run(c.name, func(t *testing.T) {
			ws, rc := collocatedUnder(t, c.policy)
			blind, prompts = 0, 0
			tokenRun(t, ws, rc, c.dc, true, counting)
			if blind != 0 || prompts == 0 {
				t.Fatalf("%d of %d prompts came blind: want none", blind, prompts)
			}
		})
	}
}

// TestBlindReceiptParity is TestBlindPathParity with route receipts on, as
// `trial run --clock virtual` records them (RecordReceipts before the
// run): under round_robin every prompt still goes blind, since the
// receipts' held tokens are the engines' own count, not an index keyed by
// the prompt's text, and every decision's receipt (each candidate's load
// and held tokens) is byte-identical to the text path's (bodies); some
// candidates hold part of a prompt, so the held figures are compared.
func TestBlindReceiptParity(t *testing.T) {
	trace := tokenTrace(t, 90)
	dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 11,
		WarmupRequests: 2, Workload: driver.Workload{Kind: "trace", Path: trace, BlockSize: 16}}
	var blind, prompts int
	ws, rc := collocatedUnder(t, "round_robin")
	_, decs, sum, _ := tokenRun(t, ws, rc, dc, true, func(d *virtual.Deployment) driver.System {
		d.RecordReceipts()
		return blindCount{d, &blind, &prompts}
	})
	if blind != sum.Completed || blind == 0 {
		t.Fatalf("%d of %d prompts came blind with receipts on, %d completed: want all of them", blind, prompts, sum.Completed)
	}
	_, wantDecs, _, _ := tokenRun(t, ws, rc, dc, true, func(d *virtual.Deployment) driver.System {
		d.RecordReceipts()
		return textPath{d, d}
	})
	got, err := json.Marshal(decs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(wantDecs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the blind path's receipts differ from the text path's: %s", firstDiff(got, want))
	}
	if !bytes.Contains(got, []byte(`"held_tokens":16`)) || !bytes.Contains(got, []byte(`"held_tokens":0`)) {
		t.Fatalf("no candidate holds a block, or every one does: the parity says nothing about held tokens: %.300s", got)
	}
}
