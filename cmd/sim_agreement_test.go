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
// and the run's duration; on a quiet machine each should be within 3 % of 1.
// Run with
//
//	go test -run '^$' -bench SimServeMatchesReplay -benchtime 1x ./cmd/
//
// AUTOINFER_AGREE_PROFILE, _RATE, _PROMPTS, _IN and _OUT change the workload
// (default h100-llama3-8b, 8 req/s, 200 prompts, 512 in, 128 out).
func BenchmarkSimServeMatchesReplay(b *testing.B) {
	profile := envOr("AUTOINFER_AGREE_PROFILE", "h100-llama3-8b")
	rate, prompts := envOr("AUTOINFER_AGREE_RATE", "8"), envOr("AUTOINFER_AGREE_PROMPTS", "200")
	in, out := envOr("AUTOINFER_AGREE_IN", "512"), envOr("AUTOINFER_AGREE_OUT", "128")
	for range b.N {
		ctx, cancel := context.WithCancel(b.Context())
		url, served := startSimServe(ctx, b, profile)
		export := filepath.Join(b.TempDir(), "requests.jsonl")
		bench := newRootCmd()
		bench.SetArgs([]string{"bench", "--base-url", url, "--model", "sim-llama-3-8b", "--dataset-name", "random",
			"--random-input-len", in, "--random-output-len", out, "--num-prompts", prompts, "--request-rate", rate,
			"--seed", "1", "--num-warmups", "0", "--disable-tqdm", "--export-requests", export, "--result-dir", b.TempDir()})
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
		b.Logf("engine step lag: %.3f s over %.3f s modelled busy (%.2f %%), worst step %.2f ms",
			lag, busy, 100*lag/busy, 1e3*fams.Sum("autoinfer:sim_step_lag_max_seconds", nil))
		b.ReportMetric(lag/busy, "lag/busy")
		cancel()
		if err := <-served; err != nil {
			b.Fatalf("sim serve: %v", err)
		}
		recs := readRecords(b, export)
		live, virt := summarize(recs), replaySummary(b, profile, recs)
		b.Logf("%-10s %12s %12s %8s", "", "sim serve", "replay", "ratio")
		for _, m := range []struct {
			name       string
			live, virt float64
		}{
			{"TTFT ms", live.ttft, virt.ttft}, {"TPOT ms", live.tpot, virt.tpot},
			{"E2E ms", live.e2e, virt.e2e}, {"duration s", live.duration, virt.duration},
		} {
			b.Logf("%-10s %12.2f %12.2f %8.4f", m.name, m.live, m.virt, m.live/m.virt)
			b.ReportMetric(m.live/m.virt, strings.ReplaceAll(strings.Fields(m.name)[0], " ", "")+"-served/replayed")
		}
	}
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

// replaySummary replays the served requests (same send times, prompt and
// output lengths; random prompts, as the random dataset shares no
// prefixes) on the virtual clock.
func replaySummary(b *testing.B, profile string, recs []metrics.RequestRecord) agreeSummary {
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
	var s agreeSummary
	end := 0.0
	for i, q := range rep.Requests {
		ttft := ms(q.TTFT())
		e2e := ms(q.E2E())
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
