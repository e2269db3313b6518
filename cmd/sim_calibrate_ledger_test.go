package cmd

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// replayedRow is one ledger row of a server with profile p: an open-loop
// workload replayed on the virtual clock, its requests recorded as a
// trial records them (send time, TTFT, inter-token latencies, counts).
func replayedRow(t *testing.T, p sim.Profile, seed uint64) []ledger.Request {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 5))
	trace := make([]sim.TraceRequest, 24)
	at := time.Duration(0)
	for i := range trace {
		prompt := make([]int, 64+rng.IntN(448))
		for j := range prompt {
			prompt[j] = 1000 + rng.IntN(20000)
		}
		trace[i] = sim.TraceRequest{At: at, Prompt: prompt, MaxTokens: 16 + rng.IntN(32), IgnoreEOS: true}
		at += time.Duration(rng.ExpFloat64() * float64(4*time.Millisecond))
	}
	rep, err := sim.Replay(sim.Options{Profile: p, Engine: engine.Config{Model: "m"}}, trace)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]ledger.Request, len(trace))
	for i, r := range rep.Requests {
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		q := ledger.Request{Index: i, ActualSendMs: ms(r.Arrival), TTFTMs: ms(r.TTFT()), E2ELMs: ms(r.E2E()),
			InputTokens: len(trace[i].Prompt), OutputTokens: len(r.TokenTimes), CachedTokens: r.CachedTokens, Status: ledger.RequestOK}
		for k := 1; k < len(r.TokenTimes); k++ {
			q.ITLs = append(q.ITLs, ms(r.TokenTimes[k]-r.TokenTimes[k-1]))
		}
		reqs[i] = q
	}
	return reqs
}

// Acceptance 4, second half: the server changed between rows (decode and
// per-sequence cost grew); a refit from the recent rows lowers the
// held-out error of the profile in use, which was right for the old ones.
func TestSimCalibrateFromLedgerFollowsDrift(t *testing.T) {
	t.Parallel()
	old, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	old.StepBaseMs, old.CPUUsPerSeq, old.PrefillUsPerToken, old.DecodeUsPerSeq, old.DecodeNsPerContextToken = 2, 15, 2, 30, 50
	drifted := old
	drifted.DecodeUsPerSeq, drifted.CPUUsPerSeq = 70, 40
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	for i := range 12 {
		p, name := old, "old"
		if i >= 6 {
			p, name = drifted, "recent"
		}
		tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: start.Add(time.Duration(i) * time.Hour),
			FinishedAt: start.Add(time.Duration(i)*time.Hour + time.Minute), EngineConfig: ledger.JSON(`{"model":"m"}`),
			Topology: ledger.Topology{Replicas: 1}, RouterConfig: ledger.JSON(`{"policy":"round_robin"}`), Workload: ledger.JSON(`{"request_rate":250}`),
			Identity: ledger.Identity{TargetKind: "static", Hardware: "h", Model: "m", WorkloadHash: "w"}}
		if _, err := l.Record(context.Background(), tr, replayedRow(t, p, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	before := filepath.Join(dir, "before.yaml")
	if err := os.WriteFile(before, fmt.Appendf(nil, `name: old
provenance: calibrated on the old server
error: exact on the old rows
base: fast
coefficients: {step_base_ms: 2, cpu_us_per_seq: 15, prefill_us_per_token: 2, decode_us_per_seq: 30, decode_ns_per_context_token: 50}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "refit.yaml")
	root := newRootCmd()
	root.SetArgs([]string{"sim", "calibrate", "--from-ledger", "--ledger", path, "--name", "recent", "--base", "fast",
		"--before", before, "--profile-file", out})
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	t.Logf("%s", stdout.String())
	for _, metric := range []string{"step", "tpot_p50", "e2e_p50"} {
		m := regexp.MustCompile(`(?m)^` + metric + `\s+([0-9.]+)%\s+([0-9.]+)%$`).FindStringSubmatch(stdout.String())
		if m == nil {
			t.Fatalf("no before/after line for %s:\n%s", metric, stdout.String())
		}
		b, _ := strconv.ParseFloat(m[1], 64)
		a, _ := strconv.ParseFloat(m[2], 64)
		if !(a < b) || a > 5 {
			t.Errorf("%s: held-out error %.1f %% before, %.1f %% after the refit: want lower, and within 5 %%", metric, b, a)
		}
	}
	p, err := sim.ReadProfileFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.DecodeUsPerSeq; d < 66.5 || d > 73.5 {
		t.Errorf("refitted decode_us_per_seq %.4g, the drifted server's is 70", d)
	}
}
