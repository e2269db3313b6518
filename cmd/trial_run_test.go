package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// Acceptance 10: the CI smoke spec passes, and fails with a message naming
// the metric, its value and the bound when an assertion or the baseline
// tolerance is violated.
// noOverload and noLag are the --max-schedule-delay and
// --max-engine-lag-ratio of runs that must pass: a driver or engines made
// late by a loaded machine must not decide them.
const (
	noOverload = "24h"
	noLag      = "1e9"
)

func TestTrialRunCISmokeChecks(t *testing.T) {
	t.Parallel()
	const spec = "../trials/examples/ci-smoke.yaml"
	// Each case has its own ledger, so the cases run in parallel.
	for _, tc := range []struct {
		name string
		// seed, when set, records a baseline row first: its name, output
		// throughput and p99 latencies.
		seed      func(t *testing.T, db string)
		args      []string
		code      int
		stderrHas []string
		stdoutHas string
	}{
		{name: "passes", args: []string{"--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag}, code: ExitOK, stdoutHas: "ci-smoke"},
		// The summary's notes list every violation: on a loaded host the
		// spec's own p99_ttft_ms < 1000 can be the first, which stderr names.
		{name: "violated assertion", args: []string{"--assert", "p99_ttft_ms < 0.001", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag}, code: ExitFailed,
			stderrHas: []string{"AssertionViolated", "p99_ttft_ms = "}, stdoutHas: "want < 0.001"},
		// A baseline far better than anything this machine can do.
		{name: "violated baseline", seed: func(t *testing.T, db string) { seedBaseline(t, db, "impossible-baseline", 1e9, 0.001) },
			args: []string{"--baseline", "impossible-baseline", "--tolerance", "10%", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag}, code: ExitFailed,
			stderrHas: []string{"BaselineRegressed", "baseline row 1", "tolerance 10%"},
			// Every violation is in the table, the first is the row's failure.
			stdoutHas: "output_throughput = "},
		// A baseline worse than anything this machine can do passes: the
		// verdict depends on the recorded figures, not on how loaded the
		// machine is now.
		{name: "baseline within tolerance", seed: func(t *testing.T, db string) { seedBaseline(t, db, "slow-baseline", 1e-9, 1e9) },
			args: []string{"--baseline", "slow-baseline", "--tolerance", "10%", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag}, code: ExitOK, stdoutHas: "ci-smoke"},
		// A refusal as HostOverloaded says what to do: the flag, or the
		// virtual clock. (Every send is later than 1 ns.)
		{name: "overloaded says what to do", args: []string{"--max-schedule-delay", "1ns"}, code: ExitFailed,
			stderrHas: []string{"HostOverloaded", "too busy", "--max-schedule-delay 250ms", "--clock virtual"}, stdoutHas: "HostOverloaded"},
		{name: "bad schedule delay", args: []string{"--max-schedule-delay", "0s"}, code: ExitUsage, stderrHas: []string{"--max-schedule-delay: must be > 0"}},
		{name: "bad engine lag bound", args: []string{"--max-engine-lag-ratio", "-1"}, code: ExitUsage, stderrHas: []string{"--max-engine-lag-ratio: must be a finite number > 0"}},
		{name: "unknown baseline", args: []string{"--baseline", "no-such-trial"}, code: ExitUsage, stderrHas: []string{"no-such-trial"}},
		{name: "bad assert", args: []string{"--assert", "p99_bogus < 1"}, code: ExitUsage, stderrHas: []string{"--assert[0]"}},
		{name: "inbound above the overhead", args: []string{"--clock", "virtual", "--http-overhead-ms", "1", "--http-inbound-ms", "1.5"}, code: ExitUsage,
			stderrHas: []string{"--http-inbound-ms: is the part of http_overhead_ms before the engine: must be at most http_overhead_ms (1), got 1.5"}},
		{name: "negative inbound", args: []string{"--http-inbound-ms", "-1"}, code: ExitUsage, stderrHas: []string{"--http-inbound-ms: must be between 0 and 1000 ms, got -1"}},
		{name: "virtual with a split path", args: []string{"--clock", "virtual", "--http-overhead-ms", "1", "--http-inbound-ms", "0.4"}, code: ExitOK, stdoutHas: "ci-smoke"},
		{name: "negative engine lag", args: []string{"--engine-lag-ms", "-1"}, code: ExitUsage, stderrHas: []string{"--engine-lag-ms: must be between 0 and 100 ms, got -1"}},
		{name: "virtual with an engine lag", args: []string{"--clock", "virtual", "--engine-lag-ms", "0.5"}, code: ExitOK, stdoutHas: "ci-smoke"},
		{name: "engine wake-up above the bound", args: []string{"--engine-wake-ms", "100.5"}, code: ExitUsage, stderrHas: []string{"--engine-wake-ms: must be between 0 and 100 ms, got 100.5"}},
		{name: "virtual with an engine wake-up", args: []string{"--clock", "virtual", "--engine-lag-ms", "0.5", "--engine-wake-ms", "0.1"}, code: ExitOK, stdoutHas: "ci-smoke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "ledger.db")
			if tc.seed != nil {
				tc.seed(t, db)
			}
			code, out, errs := run(t, append([]string{"trial", "run", spec, "--ledger", db}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errs)
			}
			for _, want := range tc.stderrHas {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			if !strings.Contains(out, tc.stdoutHas) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdoutHas, out)
			}
		})
	}
}

func TestTrialRunRejectsInvalidSpec(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "name: x\ntopology: {replicas: 0}\nworkload: {kind: random}\n")
	db := filepath.Join(t.TempDir(), "ledger.db")
	code, _, errs := run(t, "trial", "run", bad, "--ledger", db)
	if code != ExitUsage || !strings.Contains(errs, "topology") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// seedBaseline records an ok row with the given throughput and p99
// latencies (TTFT and TPOT).
func seedBaseline(t *testing.T, path, name string, throughput, p99Ms float64) {
	t.Helper()
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now := time.Now()
	tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: now, FinishedAt: now,
		EngineConfig: ledger.JSON(`{"model":"elsewhere"}`), Topology: ledger.Topology{Replicas: 1}}
	tr.OutputThroughput, tr.P99TTFTMs, tr.P99TPOTMs = throughput, p99Ms, p99Ms
	if _, err := l.Record(context.Background(), tr, nil); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrialRunEngineLagReachesTheRun: --engine-lag-ms and --engine-wake-ms
// reach the virtual run (the same spec and seed give later tokens with
// either) and its row's hardware_config, where predictions with
// different values never compete. The smoke spec runs one request at a
// time here: with several in flight a late step can gather more arrivals
// into one prefill and lower the mean TTFT (it did, by 0.2 %, once decode
// steps got cheaper), so "later" holds for a lone request only.
func TestTrialRunEngineLagReachesTheRun(t *testing.T) {
	t.Parallel()
	smoke, err := os.ReadFile("../trials/examples/ci-smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alone := strings.Replace(string(smoke), "    kind: poisson\n", "    kind: poisson\n    max_concurrency: 1\n", 1)
	if alone == string(smoke) {
		t.Fatal("ci-smoke.yaml has no poisson arrival to run one at a time")
	}
	spec := filepath.Join(t.TempDir(), "alone.yaml")
	writeFile(t, spec, alone)
	row := func(lag, wake string) ledger.Trial {
		db := filepath.Join(t.TempDir(), "ledger.db")
		if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--clock", "virtual", "--engine-lag-ms", lag, "--engine-wake-ms", wake); code != ExitOK {
			t.Fatalf("--engine-lag-ms %s --engine-wake-ms %s: exit %d\n%s\n%s", lag, wake, code, out, errs)
		}
		l, err := ledger.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		tr, err := l.Get(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	none, lagged, woken := row("0", "0"), row("2", "0"), row("0", "2")
	// A lone request's first step is planned on waking, so the wake-up
	// lateness moves its first token and the step lag every later one.
	if !(lagged.MeanTPOTMs > none.MeanTPOTMs) || !(woken.MeanTTFTMs > none.MeanTTFTMs) {
		t.Errorf("mean TPOT %v ms with a 2 ms engine lag, %v without; mean TTFT %v ms with a 2 ms wake-up lateness, %v without: want both later",
			lagged.MeanTPOTMs, none.MeanTPOTMs, woken.MeanTTFTMs, none.MeanTTFTMs)
	}
	if hc := string(lagged.HardwareConfig); !strings.Contains(hc, `"engine_lag_ms":2`) || !strings.Contains(hc, `"engine_wake_ms":0`) {
		t.Errorf("hardware_config with the lag %s: want engine_lag_ms 2 and engine_wake_ms 0", hc)
	}
	if hc := string(woken.HardwareConfig); !strings.Contains(hc, `"engine_lag_ms":0`) || !strings.Contains(hc, `"engine_wake_ms":2`) {
		t.Errorf("hardware_config with the wake-up %s: want engine_lag_ms 0 and engine_wake_ms 2", hc)
	}
	if hc := string(none.HardwareConfig); strings.Contains(hc, "engine_lag_ms") || strings.Contains(hc, "engine_wake_ms") {
		t.Errorf("hardware_config without lateness %s: want neither key", hc)
	}
}
