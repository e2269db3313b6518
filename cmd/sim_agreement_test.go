package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/scrape"
	"github.com/autoinfer/autoinfer/target/sim"
)

// BenchmarkSimServeMatchesReplay is acceptance 4 of issue 12: the same
// workload through `autoinfer sim serve` + `autoinfer bench` (real sockets,
// real timers) and through the virtual-clock harness (sim.Replay). It
// reports served/replayed ratios of mean TTFT, mean TPOT, mean E2E latency
// and the run's duration, without and with the HTTP path's constant
// measured on a separate probe run; on a quiet machine each should be
// within 3 % of 1 with it.
// Run with
//
//	go test -run '^$' -bench SimServeMatchesReplay -benchtime 1x ./cmd/
//
// AUTOINFER_AGREE_PROFILE, _RATE, _PROMPTS, _IN and _OUT change the workload
// (default h100-llama3-8b, 8 req/s, 200 prompts, 512 in, 128 out).
func BenchmarkSimServeMatchesReplay(b *testing.B) {
	profile := envOr("AUTOINFER_AGREE_PROFILE", "h100-llama3-8b")
	prompts := envOr("AUTOINFER_AGREE_PROMPTS", "200")
	for range b.N {
		// The HTTP path's constant, measured on a separate probe run
		// (another seed, its own engine) as `sim overhead` measures it:
		// the median per-request TTFT difference, served − replayed.
		probe := serveAndBench(b, profile, "2", "60")
		overhead := medianTTFTDiff(probe, replayRecords(b, profile, probe))
		recs := serveAndBench(b, profile, "1", prompts)
		live, virt := summarize(recs), replaySummary(replayRecords(b, profile, recs), recs, 0)
		withOverhead := replaySummary(replayRecords(b, profile, recs), recs, overhead)
		b.Logf("HTTP overhead from the probe run: %.3f ms", ms(overhead))
		b.Logf("%-10s %12s %12s %8s %16s %8s", "", "sim serve", "replay", "ratio", "replay+overhead", "ratio")
		for _, m := range []struct {
			name            string
			live, virt, fix float64
		}{
			{"TTFT ms", live.ttft, virt.ttft, withOverhead.ttft}, {"TPOT ms", live.tpot, virt.tpot, withOverhead.tpot},
			{"E2E ms", live.e2e, virt.e2e, withOverhead.e2e}, {"duration s", live.duration, virt.duration, withOverhead.duration},
		} {
			b.Logf("%-10s %12.2f %12.2f %8.4f %16.2f %8.4f", m.name, m.live, m.virt, m.live/m.virt, m.fix, m.live/m.fix)
			name := strings.Fields(m.name)[0]
			b.ReportMetric(m.live/m.virt, name+"-served/replayed")
			b.ReportMetric(m.live/m.fix, name+"-served/replayed+overhead")
		}
	}
}

// serveAndBench runs `autoinfer sim serve` and `autoinfer bench` against
// it with the given seed and prompt count and returns bench's records.
// AUTOINFER_AGREE_RATE, _IN and _OUT change the workload (default 8 req/s,
// 512 in, 128 out).
func serveAndBench(b *testing.B, profile, seed, prompts string) []metrics.RequestRecord {
	rate := envOr("AUTOINFER_AGREE_RATE", "8")
	in, out := envOr("AUTOINFER_AGREE_IN", "512"), envOr("AUTOINFER_AGREE_OUT", "128")
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	url, served := startSimServe(ctx, b, profile)
	export := filepath.Join(b.TempDir(), "requests.jsonl")
	bench := newRootCmd()
	bench.SetArgs([]string{"bench", "--base-url", url, "--model", "sim-llama-3-8b", "--dataset-name", "random",
		"--random-input-len", in, "--random-output-len", out, "--num-prompts", prompts, "--request-rate", rate,
		"--seed", seed, "--num-warmups", "0", "--disable-tqdm", "--export-requests", export, "--result-dir", b.TempDir()})
	bench.SetOut(io.Discard)
	bench.SetErr(io.Discard)
	if err := bench.ExecuteContext(ctx); err != nil {
		b.Fatalf("bench: %v", err)
	}
	fams, err := scrape.Fetch(ctx, http.DefaultClient, url+"/metrics")
	if err != nil {
		b.Fatal(err)
	}
	lag, busy := fams.Sum("autoinfer:sim_step_lag_seconds_total", nil), fams.Sum("autoinfer:sim_modelled_busy_seconds_total", nil)
	b.Logf("seed %s: engine step lag %.3f s over %.3f s modelled busy (%.2f %%), worst step %.2f ms",
		seed, lag, busy, 100*lag/busy, 1e3*fams.Sum("autoinfer:sim_step_lag_max_seconds", nil))
	cancel()
	if err := <-served; err != nil {
		b.Fatalf("sim serve: %v", err)
	}
	return readRecords(b, export)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// startSimServe runs `autoinfer sim serve` on a free port until ctx ends.
func startSimServe(ctx context.Context, b *testing.B, profile string) (string, <-chan error) {
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs([]string{"sim", "serve", "--port", "0", "--profile", profile})
	root.SetOut(pw)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		b.Fatalf("sim serve: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var l engineLine
	if err := json.Unmarshal(line, &l); err != nil {
		b.Fatalf("sim serve line %q: %v", line, err)
	}
	return l.URL, done
}

func readRecords(b *testing.B, path string) []metrics.RequestRecord {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var recs []metrics.RequestRecord
	dec := json.NewDecoder(f)
	for dec.More() {
		var r metrics.RequestRecord
		if err := dec.Decode(&r); err != nil {
			b.Fatal(err)
		}
		if !r.Success {
			b.Fatalf("request %d failed: %s", r.Index, r.Error)
		}
		recs = append(recs, r)
	}
	return recs
}

type agreeSummary struct{ ttft, tpot, e2e, duration float64 }

func summarize(recs []metrics.RequestRecord) agreeSummary {
	var s agreeSummary
	end := 0.0
	for _, r := range recs {
		s.ttft += r.TTFTMs
		s.tpot += r.TPOTMs
		s.e2e += r.E2ELMs
		end = max(end, r.SendMs+r.E2ELMs)
	}
	n := float64(len(recs))
	return agreeSummary{s.ttft / n, s.tpot / n, s.e2e / n, end / 1e3}
}

// replayRecords replays the served requests (same send times, prompt and
// output lengths; random prompts, as the random dataset shares no
// prefixes) on the virtual clock.
func replayRecords(b *testing.B, profile string, recs []metrics.RequestRecord) []sim.TraceResult {
	p, err := sim.LookupProfile(profile)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	trace := make([]sim.TraceRequest, len(recs))
	for i, rec := range recs {
		n := rec.InputTokens
		if rec.PromptTokens != nil {
			n = *rec.PromptTokens
		}
		ids := make([]int, n)
		for k := range ids {
			ids[k] = 1000 + r.IntN(20000)
		}
		trace[i] = sim.TraceRequest{At: time.Duration(rec.SendMs * float64(time.Millisecond)), Prompt: ids,
			MaxTokens: rec.OutputTokens, IgnoreEOS: true}
	}
	rep, err := sim.Replay(sim.Options{Engine: engine.Config{Model: "sim-llama-3-8b"}, Profile: p}, trace)
	if err != nil {
		b.Fatal(err)
	}
	return rep.Requests
}

// medianTTFTDiff is the median over requests of served TTFT − replayed
// TTFT.
func medianTTFTDiff(recs []metrics.RequestRecord, rep []sim.TraceResult) time.Duration {
	d := make([]float64, len(recs))
	for i, rec := range recs {
		d[i] = rec.TTFTMs - ms(rep[i].TTFT())
	}
	slices.Sort(d)
	return time.Duration(d[len(d)/2] * float64(time.Millisecond))
}

// replaySummary summarises replayed requests as bench summarises served
// ones, each token delivered overhead after the engine emitted it.
func replaySummary(rep []sim.TraceResult, recs []metrics.RequestRecord, overhead time.Duration) agreeSummary {
	var s agreeSummary
	end := 0.0
	for i, q := range rep {
		ttft := ms(q.TTFT() + overhead)
		e2e := ms(q.E2E() + overhead)
		s.ttft += ttft
		if k := len(q.TokenTimes); k > 1 {
			s.tpot += (e2e - ttft) / float64(k-1)
		}
		s.e2e += e2e
		end = max(end, recs[i].SendMs+e2e)
	}
	n := float64(len(recs))
	return agreeSummary{s.ttft / n, s.tpot / n, s.e2e / n, end / 1e3}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
