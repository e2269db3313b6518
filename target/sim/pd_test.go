package sim_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

type prefillAnswer struct {
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	KV map[string]any `json:"kv_transfer_params"`
}

// prefillLeg sends the prefill leg exactly as pd.md step 2 describes.
func prefillLeg(t *testing.T, c *http.Client, url, text, reqID string) prefillAnswer {
	t.Helper()
	body := map[string]any{"model": model, "prompt": text, "max_tokens": 1, "stream": false, "temperature": 0,
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil,
			"remote_block_ids": nil, "remote_host": nil, "remote_port": nil}}
	code, raw := postVia(t, c, url+"/v1/completions", body, "X-Request-Id", reqID)
	var a prefillAnswer
	if code != http.StatusOK || json.Unmarshal(raw, &a) != nil {
		t.Fatalf("prefill leg: %d %s", code, raw)
	}
	return a
}

// decodeLeg streams the original body plus the prefill's params from url and
// returns the text and the time to the first chunk.
func decodeLeg(t *testing.T, c *http.Client, url, text string, kv map[string]any) (string, time.Duration) {
	t.Helper()
	body := map[string]any{"model": model, "prompt": text, "max_tokens": 20, "ignore_eos": true, "temperature": 0, "stream": true}
	if kv != nil {
		body["kv_transfer_params"] = kv
	}
	start, ev := streamPostVia(t, c, url+"/v1/completions", body)
	var out strings.Builder
	for _, e := range ev[:len(ev)-1] {
		var c completion
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			t.Fatalf("decode chunk %q: %v", e.data, err)
		}
		out.WriteString(c.Choices[0].Text)
	}
	return out.String(), ev[0].at.Sub(start)
}

// The NIXL flow end to end, inside a synctest bubble on an in-memory network
// (HTTP and the KV side channel), so the disaggregated TTFT is exactly the
// modelled transfer plus one step computing the last prompt token.
func TestPrefillDecodeDisaggregation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		pd := timing
		pd.TransferLatencyMs = 10
		n := simtest.NewNetwork()
		c := n.Client()
		prefill := simtest.StartPipe(t, n, sim.Options{Profile: pd, Role: sim.RolePrefill})
		decode := simtest.StartPipe(t, n, sim.Options{Profile: pd, Role: sim.RoleDecode})
		collocated := simtest.StartPipe(t, n, sim.Options{Profile: pd})
		const plen = 2000
		text := prompt(21, plen)

		want, localTTFT := decodeLeg(t, c, collocated.URL, text, nil)
		if localTTFT != pd.StepTime(plen, 0, 0) {
			t.Errorf("collocated TTFT %v, model %v", localTTFT, pd.StepTime(plen, 0, 0))
		}

		a := prefillLeg(t, c, prefill.URL, text, "pd-1")
		if a.Choices[0].FinishReason != "length" || a.Usage.CompletionTokens != 1 {
			t.Fatalf("prefill leg: finish %q after %d tokens, want length after 1", a.Choices[0].FinishReason, a.Usage.CompletionTokens)
		}
		kv := a.KV
		blocks, _ := kv["remote_block_ids"].([]any)
		if kv["do_remote_prefill"] != true || kv["do_remote_decode"] != false || len(blocks) != 125 ||
			kv["remote_engine_id"] == "" || kv["remote_request_id"] != "cmpl-pd-1" || kv["remote_host"] != "127.0.0.1" ||
			kv["remote_port"] != float64(prefill.Server().KVPort()) || kv["tp_size"] != float64(1) {
			t.Fatalf("prefill kv_transfer_params %v", kv)
		}
		if held := metrics(t, c, prefill.URL).Sum("vllm:kv_transfer_held_requests", nil); held != 1 {
			t.Fatalf("prefill engine holds %v requests' KV, want 1", held)
		}

		got, ttft := decodeLeg(t, c, decode.URL, text, kv)
		if got != want {
			t.Fatalf("disaggregated text differs from collocated:\n%q\n%q", got, want)
		}
		// TTFT = modelled transfer + one step computing the last prompt token.
		last := pd.BatchTime(&sim.Batch{Chunks: []sim.Chunk{{Tokens: 1, Prefix: plen - 1}}})
		if predicted := pd.TransferTime(plen) + last; ttft != predicted {
			t.Errorf("disaggregated TTFT %v, model %v", ttft, predicted)
		}
		dm := metrics(t, c, decode.URL)
		if n := dm.Sum("vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); n != 1 {
			t.Errorf("decode engine counted %v good pulls, want 1", n)
		}
		if p := dm.Sum("vllm:prefix_cache_queries_total", nil); p != plen {
			t.Errorf("decode engine saw %v prompt tokens, want %d", p, plen)
		}
		if held := metrics(t, c, prefill.URL).Sum("vllm:kv_transfer_held_requests", nil); held != 0 {
			t.Errorf("prefill engine still holds %v requests' KV after the pull", held)
		}

		// Pulling the same KV again fails (it was released): local prefill, same text.
		again, ttft := decodeLeg(t, c, decode.URL, text, kv)
		if again != want {
			t.Fatalf("text after a failed pull differs from collocated:\n%q\n%q", again, want)
		}
		if n := metrics(t, c, decode.URL).Sum("vllm:kv_transfer_pulls_total", map[string]string{"result": "failed"}); n != 1 {
			t.Errorf("decode engine counted %v failed pulls, want 1", n)
		}
		if ttft <= last {
			t.Errorf("TTFT after a failed pull %v: the local prefill must cost more than the last token's step %v", ttft, last)
		}
		// A dead prefill engine: the pull fails at dial, decode prefills locally.
		b := prefillLeg(t, c, prefill.URL, text, "pd-2")
		prefill.Stop()
		if dead, _ := decodeLeg(t, c, decode.URL, text, b.KV); dead != want {
			t.Fatalf("text after the prefill engine died differs from collocated")
		}
	})
}

// Held KV that nobody pulls is released exactly KVHoldTimeout after the
// prefill finished.
func TestPrefillReleasesUnpulledKVAfterTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const hold = 30 * time.Millisecond
		n := simtest.NewNetwork()
		c := n.Client()
		w := simtest.StartPipe(t, n, sim.Options{Role: sim.RolePrefill, KVHoldTimeout: hold})
		prefillLeg(t, c, w.URL, prompt(22, 100), "pd-timeout")
		time.Sleep(hold - time.Microsecond)
		m := metrics(t, c, w.URL)
		if held, expired := m.Sum("vllm:kv_transfer_held_requests", nil), m.Sum("vllm:kv_transfer_hold_expired_total", nil); held != 1 || expired != 0 {
			t.Fatalf("just before the timeout: %v held, %v expired; want 1, 0", held, expired)
		}
		time.Sleep(2 * time.Microsecond)
		m = metrics(t, c, w.URL)
		if held, expired := m.Sum("vllm:kv_transfer_held_requests", nil), m.Sum("vllm:kv_transfer_hold_expired_total", nil); held != 0 || expired != 1 {
			t.Fatalf("just after the timeout: %v held, %v expired; want 0, 1", held, expired)
		}
		if u := m.Sum("vllm:kv_cache_usage_perc", nil); u != 0 {
			t.Fatalf("KV usage %v after the hold expired, want 0", u)
		}
	})
}

func TestPrefillRoleServesPlainRequestsNormally(t *testing.T) {
	t.Parallel()
	p := simtest.Start(t, sim.Options{Role: sim.RolePrefill})
	c := complete(t, p, map[string]any{"model": model, "prompt": "the model", "max_tokens": 5, "ignore_eos": true})
	if c.Usage.CompletionTokens != 5 {
		t.Fatalf("prefill-role engine without kv params gave %d tokens, want 5", c.Usage.CompletionTokens)
	}
	_, raw := post(t, p+"/v1/completions", map[string]any{"model": model, "prompt": "the model", "max_tokens": 1})
	if !strings.Contains(string(raw), `"kv_transfer_params":null`) {
		t.Fatalf("plain request got kv params: %s", raw)
	}
}

// A KV pull in progress counts as a waiting request, also on an idle engine.
func TestKVPullCountsAsWaiting(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		slow, err := sim.LookupProfile("fast")
		if err != nil {
			t.Fatal(err)
		}
		slow.TransferLatencyMs = 300
		n := simtest.NewNetwork()
		c := n.Client()
		prefill := simtest.StartPipe(t, n, sim.Options{Profile: slow, Role: sim.RolePrefill})
		decode := simtest.StartPipe(t, n, sim.Options{Profile: slow, Role: sim.RoleDecode})
		text := prompt(23, 64)
		a := prefillLeg(t, c, prefill.URL, text, "pd-waiting")
		done := make(chan struct{})
		go func() {
			defer close(done)
			body := map[string]any{"model": model, "prompt": text, "max_tokens": 2, "temperature": 0, "kv_transfer_params": a.KV}
			if code, raw := postVia(t, c, decode.URL+"/v1/completions", body); code != http.StatusOK {
				t.Errorf("decode leg: %d %s", code, raw)
			}
		}()
		time.Sleep(slow.TransferTime(64) / 2)
		if w := metrics(t, c, decode.URL).Sum("vllm:num_requests_waiting", nil); w != 1 {
			t.Errorf("mid-pull: %v waiting, want 1", w)
		}
		<-done
		synctest.Wait() // the loop publishes its gauges after the last step
		m := metrics(t, c, decode.URL)
		if w := m.Sum("vllm:num_requests_waiting", nil); w != 0 {
			t.Errorf("after the request: %v waiting, want 0", w)
		}
		if n := m.Sum("vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); n != 1 {
			t.Errorf("decode engine counted %v good pulls, want 1", n)
		}
	})
}

// A client reusing an X-Request-Id for a second prefill (a router retrying a
// leg) replaces the first hold; the first one's blocks are freed, not leaked.
func TestReusedRequestIDReplacesHeldKV(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		off := false
		n := simtest.NewNetwork()
		c := n.Client()
		w := simtest.StartPipe(t, n, sim.Options{Role: sim.RolePrefill, Engine: engine.Config{EnablePrefixCaching: &off}})
		text := prompt(24, 100) // 100 tokens: 7 blocks of 16
		prefillLeg(t, c, w.URL, text, "pd-same")
		synctest.Wait()
		once := metrics(t, c, w.URL).Sum("vllm:kv_cache_usage_perc", nil)
		if once == 0 {
			t.Fatal("no KV in use after a prefill that holds its blocks")
		}
		prefillLeg(t, c, w.URL, text, "pd-same")
		synctest.Wait()
		m := metrics(t, c, w.URL)
		if held := m.Sum("vllm:kv_transfer_held_requests", nil); held != 1 {
			t.Errorf("%v holds after two prefills under one id, want 1", held)
		}
		if u := m.Sum("vllm:kv_cache_usage_perc", nil); u != once {
			t.Errorf("KV usage %v after the second prefill, want %v (a leaked first hold doubles it)", u, once)
		}
	})
}

// Acceptance 5 of issue 12: eight concurrent 4k-token pulls from one prefill
// server share one link, so their bytes take eight times as long as one
// pull's alone (not the same time, as independent pulls would). Calibrated
// H100 Llama-3-8B profile: 512 MiB per pull at 50 GB/s, after 3 ms launch and
// 16384 descriptors at 3.5 µs.
func TestConcurrentPullsShareTheLink(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, err := sim.LookupProfile("h100-llama3-8b")
		if err != nil {
			t.Fatal(err)
		}
		n := simtest.NewNetwork()
		c := n.Client()
		prefill := simtest.StartPipe(t, n, sim.Options{Profile: p, Role: sim.RolePrefill})
		decode := simtest.StartPipe(t, n, sim.Options{Profile: p, Role: sim.RoleDecode})
		const plen, pulls = 4096, 8
		decodeAll := func(texts []string, kvs []map[string]any) {
			done := make(chan struct{})
			for i := range texts {
				go func() {
					defer func() { done <- struct{}{} }()
					decodeLeg(t, c, decode.URL, texts[i], kvs[i])
				}()
			}
			for range texts {
				<-done
			}
		}
		leg := func(seed uint64) (string, map[string]any) {
			text := prompt(seed, plen)
			return text, prefillLeg(t, c, prefill.URL, text, fmt.Sprintf("pull-%d", seed)).KV
		}
		// The decode engine records each pull's modelled time (launch,
		// descriptors, bytes) in vllm:kv_transfer_time_seconds. TTFT adds
		// the decode steps, and which of eight requests that finish their
		// pulls at the same instant make the same step is up to the
		// scheduler, so the pull times are read there.
		pullSeconds := func() (sum float64, count uint64) {
			h := metrics(t, c, decode.URL)["vllm:kv_transfer_time_seconds"].GetMetric()[0].GetHistogram()
			return h.GetSampleSum(), h.GetSampleCount()
		}
		text, kv := leg(100)
		decodeAll([]string{text}, []map[string]any{kv})
		alone, _ := pullSeconds()
		var texts []string
		var kvs []map[string]any
		for i := range pulls {
			text, kv := leg(uint64(200 + i))
			texts, kvs = append(texts, text), append(kvs, kv)
		}
		decodeAll(texts, kvs)
		sum, count := pullSeconds()
		if count != pulls+1 {
			t.Fatalf("%d pulls recorded, want %d", count, pulls+1)
		}
		setup := (p.TransferTime(plen) - time.Duration(math.Round(float64(plen*p.KVBytesPerToken)/p.LinkGBps))).Seconds()
		linkAlone := alone - setup
		linkShared := (sum-alone)/pulls - setup
		t.Logf("one pull: %.2f ms (link %.2f ms); each of eight together: %.2f ms (link %.2f ms, ×%.3f)",
			1e3*alone, 1e3*linkAlone, 1e3*(sum-alone)/pulls, 1e3*linkShared, linkShared/linkAlone)
		if want := float64(plen*p.KVBytesPerToken) / p.LinkGBps / 1e9; math.Abs(linkAlone-want) > 1e-6 {
			t.Errorf("a lone pull's link time %.6f s, model %.6f s", linkAlone, want)
		}
		if r := linkShared / linkAlone; r < 7.99 || r > 8.01 {
			t.Errorf("eight concurrent pulls' link time is %.3f× a lone pull's, want 8× (one shared link)", r)
		}
	})
}
