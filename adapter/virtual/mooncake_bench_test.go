package virtual_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// Scale of the public Mooncake FAST'25 conversation trace (12,031 requests
// over 59 minutes, mean input about 12k tokens in 512-token blocks).
const (
	mooncakeRequests  = 12031
	mooncakeSpan      = 59 * time.Minute
	mooncakeBlock     = 512
	mooncakeMaxTokens = 120_000
)

// mooncakeLine is one line of a Mooncake-format trace.
type mooncakeLine struct {
	Timestamp    int   `json:"timestamp"`
	InputLength  int   `json:"input_length"`
	OutputLength int   `json:"output_length"`
	HashIDs      []int `json:"hash_ids"`
}

// writeMooncakeTrace writes a Mooncake-format trace of n requests over
// span, shaped as the public conversation trace: every prompt opens with
// the one shared block 0, conversations start as a Poisson stream and grow
// turn by turn (a turn's prompt is the previous prompt, its answer and a
// new message, so its hash_ids extend the previous turn's), turns a
// minute apart on average, about 1.55 turns per conversation. Its
// parameters are fitted to the public trace's figures: 12,031 requests
// over 59 minutes, a mean input of about 12k tokens, and 182,790 distinct
// hash ids (ids are numbered in order of first use: its last line's largest
// is 182,789) among about 289k block references, so about 37 % of block
// references repeat an earlier one. Seeded: the same file every time. It
// returns the path and the mean input length.
func writeMooncakeTrace(tb testing.TB, dir string, n int, span time.Duration) (string, float64) {
	tb.Helper()
	rnd := rand.New(rand.NewPCG(30, 2025))
	next := 1 // id 0: the block every prompt opens with
	type conv struct {
		at     float64 // ms of its next turn
		ids    []int   // its context's full blocks
		tokens int     // its context's length
	}
	var lines []mooncakeLine
	var live []*conv
	rate := float64(n) / 1.55 / span.Seconds() // conversations per second: about 1.55 turns each
	for t := 0.0; t < span.Seconds()*1000; t += rnd.ExpFloat64() / rate * 1000 {
		live = append(live, &conv{at: t, ids: []int{0}, tokens: mooncakeBlock})
	}
	for _, c := range live {
		for turn := 0; c.at < span.Seconds()*1000; turn++ {
			msg := int(math.Exp(rnd.NormFloat64()*0.8 + math.Log(2000)))
			if turn == 0 {
				msg = int(math.Exp(rnd.NormFloat64()*0.9 + math.Log(6600)))
			}
			in := min(c.tokens+msg, mooncakeMaxTokens)
			ids := slices.Clone(c.ids)
			for len(ids)*mooncakeBlock < in {
				ids = append(ids, next)
				next++
			}
			out := max(1, min(int(math.Exp(rnd.NormFloat64()*0.7+math.Log(268))), 2000))
			lines = append(lines, mooncakeLine{Timestamp: int(c.at), InputLength: in, OutputLength: out, HashIDs: ids})
			if in+out >= mooncakeMaxTokens || rnd.Float64() < 0.63 {
				break
			}
			full := (in + out) / mooncakeBlock
			c.ids, c.tokens = ids[:min(full, len(ids))], in+out
			for len(c.ids) < full {
				c.ids = append(c.ids, next)
				next++
			}
			c.at += rnd.ExpFloat64() * 60_000
		}
	}
	slices.SortStableFunc(lines, func(a, b mooncakeLine) int { return a.Timestamp - b.Timestamp })
	if len(lines) > n {
		lines = lines[:n]
	}
	path := filepath.Join(dir, "mooncake.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	sum := 0
	for _, l := range lines {
		sum += l.InputLength
		if err := enc.Encode(l); err != nil {
			tb.Fatal(err)
		}
	}
	return path, float64(sum) / float64(len(lines))
}

// peakHeapOf is a probe of d that reads the heap in use every 64 sends
// and keeps the largest reading in *peak: the run's peak heap (garbage not
// yet collected included) to within what one 64-request stretch adds.
func peakHeapOf(d *virtual.Deployment, peak *uint64) *sendProbe {
	return &sendProbe{Deployment: d, onSend: func(n int) {
		if (n-1)%64 == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			*peak = max(*peak, m.HeapAlloc)
		}
	}}
}

// BenchmarkMooncakeScale is issue 30's speed and memory benchmark: a
// Mooncake-format trace at the public conversation trace's scale
// (writeMooncakeTrace: 12,031 requests over 59 minutes, mean input about
// 12k tokens, shared hash_ids) replayed on the virtual clock on 8
// h100-llama3-8b engines (max_model_len 128k) behind the router
// (AUTOINFER_MOONCAKE_POLICY, default round_robin), records streamed into
// the summary. It reports x real time (simulated over CPU time, the
// trace's generation and reading included), requests per CPU-second and
// the peak heap.
//
//	go test -run '^$' -bench MooncakeScale -benchtime 1x -timeout 30m ./adapter/virtual
func BenchmarkMooncakeScale(b *testing.B) {
	path, meanIn := writeMooncakeTrace(b, b.TempDir(), mooncakeRequests, mooncakeSpan)
	policy := os.Getenv("AUTOINFER_MOONCAKE_POLICY")
	if policy == "" {
		policy = "round_robin"
	}
	prof, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	var reqs int
	var simulated, cpu time.Duration
	var peak uint64
	var steps int
	for b.Loop() {
		runtime.GC()
		cfg := routerconfig.Default()
		cfg.Policy = policy
		ws := make([]virtual.Worker, 8)
		for i := range ws {
			ws[i] = virtual.Worker{URL: fmt.Sprintf("http://virtual-%03d.invalid:1", i),
				Options: sim.Options{Profile: prof, Engine: engine.Config{Model: "sim-model", MaxModelLen: mooncakeMaxTokens + 2048}}}
			cfg.WorkerURLs = append(cfg.WorkerURLs, ws[i].URL)
		}
		rc := router.Config(cfg)
		d, err := virtual.New(ws, &rc, 1)
		if err != nil {
			b.Fatal(err)
		}
		var runPeak uint64
		probe := peakHeapOf(d, &runPeak)
		dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 1, WarmupRequests: -1,
			Workload: driver.Workload{Kind: "trace", Path: path, BlockSize: mooncakeBlock}}
		c0 := cpuTime(b)
		res, err := driver.SimulateWith(context.Background(), dc, probe, driver.SimOptions{Stream: true})
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - c0
		if res.Summary.Completed != mooncakeRequests {
			b.Fatalf("%d of %d requests completed", res.Summary.Completed, mooncakeRequests)
		}
		reqs += res.Summary.Completed
		simulated += time.Duration(res.Summary.Duration * float64(time.Second))
		peak = max(peak, runPeak)
		n, _ := d.Fleet().Steps()
		steps += n
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps")
	b.ReportMetric(simulated.Seconds()/cpu.Seconds(), "x-realtime")
	b.ReportMetric(float64(reqs)/cpu.Seconds(), "req/cpu-s")
	b.ReportMetric(float64(peak)/1e6, "MB-peak-heap")
	b.ReportMetric(meanIn, "mean-input-tokens")
}

// The generated trace has the public trace's scale: its request count
// within its span, a mean input of about 12k tokens, and prefixes shared
// through hash_ids (within conversations and across system prompts).
func TestMooncakeTraceShape(t *testing.T) {
	path, meanIn := writeMooncakeTrace(t, t.TempDir(), mooncakeRequests, mooncakeSpan)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []mooncakeLine
	seen, shared := map[int]bool{}, 0
	for _, raw := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var l mooncakeLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		for _, id := range l.HashIDs {
			if seen[id] {
				shared++
			}
			seen[id] = true
		}
		lines = append(lines, l)
	}
	last := time.Duration(lines[len(lines)-1].Timestamp) * time.Millisecond
	refs := shared + len(seen)
	reused := float64(shared) / float64(refs)
	t.Logf("%d requests over %v, mean input %.0f tokens, %d distinct hash ids, %d of %d block references (%.1f %%) repeat one",
		len(lines), last, meanIn, len(seen), shared, refs, 100*reused)
	if len(lines) != mooncakeRequests || last > mooncakeSpan || last < mooncakeSpan*9/10 {
		t.Errorf("%d requests over %v, want %d over about %v", len(lines), last, mooncakeRequests, mooncakeSpan)
	}
	if meanIn < 11000 || meanIn > 13000 {
		t.Errorf("mean input %.0f tokens, want about 12k", meanIn)
	}
	// The public trace: 182,790 distinct ids, about 37 % of references
	// repeated (more repetition would make the benchmark's prompts cheaper
	// than the public trace's).
	if d := float64(len(seen))/182790 - 1; math.Abs(d) > 0.05 {
		t.Errorf("%d distinct hash ids, want within 5 %% of the public trace's 182,790", len(seen))
	}
	if reused < 0.32 || reused > 0.42 {
		t.Errorf("%.1f %% of block references repeat one, want about the public trace's 37 %%", 100*reused)
	}
}
