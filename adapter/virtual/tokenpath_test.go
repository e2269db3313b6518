package virtual_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// textPath is a deployment with its token path hidden: every request goes
// to it as its body, which the engines parse and tokenize (the path every
// request took before the token path).
type textPath struct {
	driver.System
	d *virtual.Deployment
}

func (t textPath) Cancel(id int) { t.d.Cancel(id) }
func (t textPath) OpenWindow()   { t.d.OpenWindow() }

// perturbed is the token path with the second engine block of every
// prompt made of other tokens: prompts that shared it no longer do.
type perturbed struct{ *virtual.Deployment }

func (p perturbed) SendPrompt(id int, route string, header http.Header, pr driver.Prompt, at time.Duration) error {
	var ids []uint16
	for _, s := range pr.Spans {
		ids = append(ids, s.IDs...)
	}
	for j := 16; j < min(32, len(ids)); j++ {
		ids[j] = uint16(7 + (int(ids[j])+id)%1000)
	}
	pr.Spans = []tokenizer.Span{{IDs: ids}} // its own: no key
	return p.Deployment.SendPrompt(id, route, header, pr, at)
}

// counted is the token path, counting the requests that took it.
type counted struct {
	*virtual.Deployment
	n *int
}

func (c counted) SendPrompt(id int, route string, header http.Header, pr driver.Prompt, at time.Duration) error {
	*c.n++
	return c.Deployment.SendPrompt(id, route, header, pr, at)
}

// tokenTrace writes a Mooncake-format trace of n requests 40 ms apart
// whose prompts (16-token blocks) share prefixes by hash_ids: six
// conversations, each line one to four blocks longer than its
// conversation's last, some ending inside a block.
func tokenTrace(t *testing.T, n int) string {
	t.Helper()
	var buf bytes.Buffer
	turns := map[int]int{}
	for i := range n {
		conv := i % 6
		turns[conv]++
		blocks := 2 + turns[conv]%5
		ids := make([]int, blocks)
		for j := range ids {
			ids[j] = conv*100 + j
		}
		in := blocks*16 - (i%3)*5
		line := map[string]any{"timestamp": i * 40, "input_length": in, "output_length": 3 + i%9, "hash_ids": ids}
		b, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tokenRun runs dc on a fresh deployment of rc over ws, as wrap makes it
// (the token path, the text path or a perturbed one), and returns its
// records as JSON lines (streamed: as SimOptions.Records hands them, in
// index order), its routing decisions, its summary and the share of
// prompt tokens the prefix caches hit.
func tokenRun(t *testing.T, ws []virtual.Worker, rc *router.Config, dc driver.Config, stream bool,
	wrap func(*virtual.Deployment) driver.System) ([]byte, []virtual.Decision, metrics.Summary, float64) {
	t.Helper()
	d, err := virtual.New(ws, rc, 3)
	if err != nil {
		t.Fatal(err)
	}
	var decisions []virtual.Decision
	d.RecordDecisions(func(x virtual.Decision) { decisions = append(decisions, x) })
	opt := driver.SimOptions{Stream: stream}
	var streamed []metrics.RequestRecord
	if stream {
		opt.Records = func(r *driver.RequestRecord) { streamed = append(streamed, *r) }
	}
	res, err := driver.SimulateWith(context.Background(), dc, wrap(d), opt)
	if err != nil {
		t.Fatal(err)
	}
	recs := res.Requests
	if stream {
		slices.SortFunc(streamed, func(a, b metrics.RequestRecord) int { return a.Index - b.Index })
		recs = streamed
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSONL(&buf, recs); err != nil {
		t.Fatal(err)
	}
	prompt, cached := 0, 0
	for _, r := range recs {
		if r.PromptTokens != nil && r.CachedTokens != nil {
			prompt, cached = prompt+*r.PromptTokens, cached+*r.CachedTokens
		}
	}
	return buf.Bytes(), decisions, res.Summary, float64(cached) / float64(max(prompt, 1))
}

// collocatedUnder is three collocated engines behind the router under
// policy.
func collocatedUnder(t *testing.T, policy string) ([]virtual.Worker, *router.Config) {
	t.Helper()
	ws := workers(t, 3, sim.RoleCollocated)
	cfg := routerconfig.Default()
	cfg.Policy = policy
	for _, w := range ws {
		cfg.WorkerURLs = append(cfg.WorkerURLs, w.URL)
	}
	rc := router.Config(cfg)
	return ws, &rc
}

// TestTokenPathParity is issue 30's acceptance 2, the clock-parity test:
// under the virtual clock, handing the engines each prompt's token ids
// (the token path) gives byte-identical request records (every TTFT, ITL
// and so TPOT and E2E, cached-token count) and the same routing decisions
// as sending them the bodies to parse, with the same seed, on a
// Mooncake-format trace with shared hash_ids and on a random workload with
// a shared prefix, under cache-aware, consistent-hash and prefill/decode
// routing, on completions and chat; streamed runs agree on their summary.
// The comparison can fail: perturbing the prompts' second block on the
// token path changes the records.
func TestTokenPathParity(t *testing.T) {
	trace := tokenTrace(t, 90)
	traceCfg := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 11,
		WarmupRequests: 2, Workload: driver.Workload{Kind: "trace", Path: trace, BlockSize: 16}}
	randomCfg := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.ChatEndpoint, Model: "sim-model", Seed: 12,
		WarmupRequests: 2, NumPrompts: 80, Arrival: driver.Arrival{Kind: "poisson", RequestRate: 30},
		Workload: driver.Workload{Kind: "random", PrefixLen: 48, InputLen: 24, OutputLen: 6, RangeRatio: 0.5}}
	collocated := func(policy string) ([]virtual.Worker, *router.Config) { return collocatedUnder(t, policy) }
	disaggregated := func(threshold int) ([]virtual.Worker, *router.Config) {
		ws := append(workers(t, 2, sim.RolePrefill), workers(t, 2, sim.RoleDecode)...)
		cfg := routerconfig.Default()
		cfg.PDDisaggregation, cfg.KVConnector, cfg.RoutingThreshold = true, "nixl", threshold
		cfg.PrefillPolicy, cfg.DecodePolicy = "power_of_two", "cache_aware"
		cfg.PrefillURLs, cfg.DecodeURLs = []string{ws[0].URL, ws[1].URL}, []string{ws[2].URL, ws[3].URL}
		rc := router.Config(cfg)
		return ws, &rc
	}
	var prompted int
	tokens := func(d *virtual.Deployment) driver.System { return counted{d, &prompted} }
	text := func(d *virtual.Deployment) driver.System { return textPath{d, d} }
	for _, c := range []struct {
		name   string
		dc     driver.Config
		deploy func() ([]virtual.Worker, *router.Config)
	}{
		{"trace/cache_aware", traceCfg, func() ([]virtual.Worker, *router.Config) { return collocated("cache_aware") }},
		{"trace/pd", traceCfg, func() ([]virtual.Worker, *router.Config) { return disaggregated(0) }},
		{"random-chat/pd-threshold", randomCfg, func() ([]virtual.Worker, *router.Config) { return disaggregated(110) }},
		{"random-chat/cache_aware", randomCfg, func() ([]virtual.Worker, *router.Config) { return collocated("cache_aware") }},
		{"random-chat/consistent_hash", randomCfg, func() ([]virtual.Worker, *router.Config) { return collocated("consistent_hash") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, rc := c.deploy()
			prompted = 0
			recs, decs, sum, hits := tokenRun(t, ws, rc, c.dc, false, tokens)
			if prompted != sum.Completed || prompted == 0 {
				t.Fatalf("%d requests took the token path, %d completed: want all of them", prompted, sum.Completed)
			}
			want, wantDecs, wantSum, _ := tokenRun(t, ws, rc, c.dc, false, text)
			if !bytes.Equal(recs, want) {
				t.Fatalf("the token path's records differ from the text path's: %s", firstDiff(recs, want))
			}
			if fmt.Sprint(decs) != fmt.Sprint(wantDecs) || len(decs) == 0 {
				t.Fatalf("%d routing decisions on the token path, %d on the text path, or they differ", len(decs), len(wantDecs))
			}
			if strings.HasSuffix(c.name, "threshold") {
				pd := 0
				for _, x := range decs {
					if x.PD {
						pd++
					}
				}
				if pd == 0 || pd == len(decs) {
					t.Fatalf("%d of %d requests took the prefill hop: routing_threshold should split them", pd, len(decs))
				}
			}
			if sum.Completed == 0 || sum.StreamHash != wantSum.StreamHash || sum.SentHash != wantSum.SentHash {
				t.Fatalf("completed %d, stream %s sent %s; text path: stream %s sent %s", sum.Completed, sum.StreamHash, sum.SentHash, wantSum.StreamHash, wantSum.SentHash)
			}
			if hits < 0.2 {
				t.Fatalf("%.2f of prompt tokens hit the prefix cache: the workload must share prefixes for the parity to say anything", hits)
			}
			_, _, streamed, _ := tokenRun(t, ws, rc, c.dc, true, tokens)
			_, _, streamedText, _ := tokenRun(t, ws, rc, c.dc, true, text)
			if a, b := figures(streamed), figures(streamedText); a != b {
				t.Fatalf("streamed: token path %s, text path %s", a, b)
			}
			bad, _, _, _ := tokenRun(t, ws, rc, c.dc, false, func(d *virtual.Deployment) driver.System { return perturbed{d} })
			if bytes.Equal(bad, want) {
				t.Fatal("perturbing the prompts' second block left every record as it was: the comparison cannot fail")
			}
		})
	}
}

// figures are a streamed summary's figures that depend on the requests'
// times and tokens (not on the host's clock).
func figures(s metrics.Summary) string {
	return fmt.Sprintf("completed %d, ttft %.6f/%.6f, tpot %.6f/%.6f, e2e %.6f/%.6f, output %d, stream %s, sent %s",
		s.Completed, s.MeanTTFTMs, s.P99TTFTMs, s.MeanTPOTMs, s.P99TPOTMs, s.MeanE2ELMs, s.P99E2ELMs, s.TotalOutputTokens, s.StreamHash, s.SentHash)
}

// firstDiff is the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\n%s\n%s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(la), len(lb))
}

// spanProbe is the token path, noting each request's first span (its
// conversation's first block) and whether every prompt had ids.
type spanProbe struct {
	*virtual.Deployment
	first map[int]tokenizer.Span
	lenOK *bool
}

func (s spanProbe) SendPrompt(id int, route string, header http.Header, pr driver.Prompt, at time.Duration) error {
	s.first[id] = pr.Spans[0]
	*s.lenOK = *s.lenOK && tokenizer.SpansLen(pr.Spans) > 0
	return s.Deployment.SendPrompt(id, route, header, pr, at)
}

// The driver hands the engines a trace block as the workload's one span,
// not a copy per prompt: every line of a conversation (tokenTrace: line i
// is conversation i%6) gets its first block as the same ids (one backing
// array) under the same nonzero key, and the six conversations' first
// blocks have six keys.
func TestTokenPathSharesBlockSpans(t *testing.T) {
	ws := workers(t, 2, sim.RoleCollocated)
	cfg := routerconfig.Default()
	for _, w := range ws {
		cfg.WorkerURLs = append(cfg.WorkerURLs, w.URL)
	}
	rc := router.Config(cfg)
	dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 11,
		WarmupRequests: -1, Workload: driver.Workload{Kind: "trace", Path: tokenTrace(t, 36), BlockSize: 16}}
	first, lenOK := map[int]tokenizer.Span{}, true
	tokenRun(t, ws, &rc, dc, false, func(d *virtual.Deployment) driver.System { return spanProbe{d, first, &lenOK} })
	if len(first) != 36 || !lenOK {
		t.Fatalf("%d requests took the token path (want 36), each with ids: %v", len(first), lenOK)
	}
	keys := map[uint64]bool{}
	for i := range 36 {
		a, b := first[i], first[i%6]
		if &a.IDs[0] != &b.IDs[0] || a.Key != b.Key || a.Key == 0 {
			t.Fatalf("request %d's first block is not request %d's span (key %d, %d)", i, i%6, a.Key, b.Key)
		}
		keys[a.Key] = true
	}
	if len(keys) != 6 {
		t.Fatalf("%d keys for the six conversations' first blocks", len(keys))
	}
}
