package router

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is an upstream that records every request (body and headers)
// and answers with a fixed status and body.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	ids    []string
	status int
	answer string
}

func newRecorder(t *testing.T, status int, answer string) *recorder {
	t.Helper()
	rec := &recorder{status: status, answer: answer}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var b map[string]any
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("upstream got a body that is not a JSON object: %q", raw)
		}
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, b)
		rec.ids = append(rec.ids, r.Header.Get("X-Request-Id"))
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.status)
		fmt.Fprint(w, rec.answer)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) last(t *testing.T) (map[string]any, string) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) == 0 {
		t.Fatal("upstream received no request")
	}
	return rec.bodies[len(rec.bodies)-1], rec.ids[len(rec.ids)-1]
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.bodies)
}

// pdTestConfig is testConfig in PD mode.
func pdTestConfig(connector string, prefill, decode []string) Config {
	c := testConfig("round_robin")
	c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, connector, "round_robin", "round_robin"
	c.PrefillURLs, c.DecodeURLs = prefill, decode
	return c
}

// prefillReply is what a NIXL prefill engine answers (pd.md step 3).
const prefillKV = `{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[3,4,5],` +
	`"remote_engine_id":"eng-1","remote_request_id":"cmpl-x","remote_host":"10.0.0.7","remote_port":5600,"tp_size":1}`

const prefillReply = `{"id":"cmpl-x","object":"text_completion","choices":[{"index":0,"text":"a","finish_reason":"length"}],` +
	`"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":8}},` +
	`"kv_transfer_params":` + prefillKV + `}`

// 7. The prefill leg's body, checked field by field against pd.md step 2,
// and the decode leg's against step 4.
func TestPDPrefillBodyMatchesPDMD(t *testing.T) {
	t.Parallel()
	client := map[string]any{
		"model": "m", "prompt": "tell me a story", "max_tokens": 50.0, "temperature": 0.0, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "min_tokens": 5.0,
		"min_completion_tokens": 5.0, "user": "u1", "logprobs": 2.0,
	}
	for _, tc := range []struct {
		name          string
		maxCompletion bool
	}{{"max_tokens only", false}, {"with max_completion_tokens", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newRecorder(t, 200, prefillReply)
			d := newRecorder(t, 200, `{"choices":[{"text":"ok"}]}`)
			e := loopback(t)
			_, base := e.router(pdTestConfig("nixl", []string{p.URL}, []string{d.URL}))
			body := map[string]any{}
			for k, v := range client {
				body[k] = v
			}
			if tc.maxCompletion {
				body["max_completion_tokens"] = 50.0
			}
			raw, _ := json.Marshal(body)
			if res := e.Post(base+"/v1/completions", string(raw), "X-Request-Id", "client-id-1"); res.Status != 200 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}

			got, pid := p.last(t)
			want := map[string]any{}
			for k, v := range body {
				want[k] = v
			}
			want["max_tokens"] = 1.0
			if tc.maxCompletion {
				want["max_completion_tokens"] = 1.0
			}
			want["stream"] = false
			delete(want, "stream_options")
			delete(want, "min_tokens")
			delete(want, "min_completion_tokens")
			want["kv_transfer_params"] = map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
				"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("prefill body (-want +got):\n%s", diff)
			}
			if _, ok := got["max_completion_tokens"]; ok != tc.maxCompletion {
				t.Errorf("max_completion_tokens present = %v, want %v (only if the client sent it)", ok, tc.maxCompletion)
			}

			gotD, did := d.last(t)
			wantD := map[string]any{}
			for k, v := range body {
				wantD[k] = v
			}
			var kv map[string]any
			_ = json.Unmarshal([]byte(prefillKV), &kv)
			wantD["kv_transfer_params"] = kv
			if diff := cmp.Diff(wantD, gotD); diff != "" {
				t.Errorf("decode body (-want +got):\n%s", diff)
			}
			if pid != "client-id-1" || did != "client-id-1" {
				t.Errorf("X-Request-Id prefill %q, decode %q; want the client's id on both legs", pid, did)
			}
		})
	}
}

func TestPDNCCLRequestIDNamesBothPeers(t *testing.T) {
	t.Parallel()
	p := newRecorder(t, 200, prefillReply)
	d := newRecorder(t, 200, `{"choices":[{"text":"ok"}]}`)
	e := loopback(t)
	_, base := e.router(pdTestConfig("nccl", []string{p.URL}, []string{d.URL}))
	if res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"hi","max_tokens":3}`); res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	_, pid := p.last(t)
	_, did := d.last(t)
	want := regexp.MustCompile(`^___prefill_addr_` + regexp.QuoteMeta(strings.TrimPrefix(p.URL, "http://")) +
		`___decode_addr_` + regexp.QuoteMeta(strings.TrimPrefix(d.URL, "http://")) + `_[0-9a-f]{32}$`)
	if !want.MatchString(pid) || pid != did {
		t.Fatalf("request ids prefill %q decode %q; want one id matching %s", pid, did, want)
	}
}

// Non-streaming answers take cached_tokens from the prefill leg only when
// the decode engine's usage lacks it.
func TestPDCachedTokensFromPrefill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, decodeUsage string
		want              float64
	}{
		{"missing details", `{"prompt_tokens":9,"completion_tokens":3}`, 8},
		{"null cached", `{"prompt_tokens":9,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":null}}`, 8},
		{"decode has it", `{"prompt_tokens":9,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newRecorder(t, 200, prefillReply)
			d := newRecorder(t, 200, `{"id":"d","choices":[{"text":"abc"}],"usage":`+tc.decodeUsage+`}`)
			e := loopback(t)
			_, base := e.router(pdTestConfig("nixl", []string{p.URL}, []string{d.URL}))
			res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"hi","max_tokens":3}`)
			if res.Status != 200 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
			b, h := res.Body, res.Header
			var out struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
				Usage struct {
					Details struct {
						Cached float64 `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(b), &out); err != nil {
				t.Fatalf("answer %q: %v", b, err)
			}
			if out.Usage.Details.Cached != tc.want || len(out.Choices) != 1 || out.Choices[0].Text != "abc" {
				t.Fatalf("answer %s: want decode's text with cached_tokens %v", b, tc.want)
			}
			if cl := h.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(b)) {
				t.Fatalf("Content-Length %s for a %d-byte body", cl, len(b))
			}
		})
	}
}

// A non-streaming decode answer over the patch bound is relayed whole and
// unpatched, never cut at the bound.
func TestPDOversizedDecodeAnswerRelayedWhole(t *testing.T) {
	t.Parallel()
	p := newRecorder(t, 200, prefillReply)
	answer := `{"id":"d","choices":[{"text":"` + strings.Repeat("x", maxJSONBody) + `"}],"usage":{"prompt_tokens":9,"completion_tokens":3}}`
	d := newRecorder(t, 200, answer)
	e := loopback(t)
	_, base := e.router(pdTestConfig("nixl", []string{p.URL}, []string{d.URL}))
	res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"hi","max_tokens":3}`)
	if res.Status != 200 || res.Body != answer {
		t.Fatalf("status %d, %d-byte answer relayed as %d bytes; want the decode answer unchanged", res.Status, len(answer), len(res.Body))
	}
}

// A prefill engine that hit EOS returns no kv_transfer_params: the decode
// leg gets the client's body unchanged (and prefills locally).
func TestPDNoKVParamsSendsOriginalBody(t *testing.T) {
	t.Parallel()
	p := newRecorder(t, 200, `{"choices":[{"text":"","finish_reason":"stop"}],"kv_transfer_params":null}`)
	d := newRecorder(t, 200, `{"choices":[{"text":"ok"}]}`)
	e := loopback(t)
	_, base := e.router(pdTestConfig("nixl", []string{p.URL}, []string{d.URL}))
	client := `{"model":"m","prompt":"hi","max_tokens":3,"stream":false}`
	if res := e.Post(base+"/v1/completions", client); res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	got, _ := d.last(t)
	var want map[string]any
	_ = json.Unmarshal([]byte(client), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("decode body (-want +got):\n%s", diff)
	}
}

// A prefill worker's own client error (4xx) is the client's answer; nothing
// reaches a decode worker.
func TestPDPrefillClientErrorIsRelayed(t *testing.T) {
	t.Parallel()
	p := newRecorder(t, 400, `{"error":{"message":"bad prompt","type":"BadRequestError","param":"prompt","code":400}}`)
	d := newRecorder(t, 200, `{"choices":[{"text":"ok"}]}`)
	e := loopback(t)
	_, base := e.router(pdTestConfig("nixl", []string{p.URL}, []string{d.URL}))
	res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"hi"}`)
	if res.Status != 400 || res.ErrorType() != "BadRequestError" || d.count() != 0 {
		t.Fatalf("status %d body %s, decode requests %d; want the prefill's 400 and no decode leg", res.Status, res.Body, d.count())
	}
	if p.count() != 1 {
		t.Fatalf("prefill got %d requests; a 4xx must not be retried", p.count())
	}
}
