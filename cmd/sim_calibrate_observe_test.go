package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target/sim"
)

// serveTruth runs `autoinfer sim serve` with args on a free loopback
// port until the test ends and returns its URL.
func serveTruth(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(append([]string{"sim", "serve", "--port", "0"}, args...))
	root.SetOut(pw)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sim serve: %v", err)
		}
	})
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatal("sim serve printed no engine line")
	}
	var l engineLine
	if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return l.URL
}

// cancelOn is stderr that cancels the command once it has shown a line
// holding want.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.cancel != nil && strings.Contains(c.buf.String(), c.want) {
		c.cancel()
	}
	return len(p), nil
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// A hidden-truth `sim serve` over real loopback: calibrate shows progress,
// writes a profile file that names the server and parses, and the fitted
// coefficients are logged against the truth (the exact 5 % check is
// TestCalibrateRecoversHiddenTruth, on an exact clock; here the host's
// load is in the figures).
func TestSimCalibrateObserveWritesProfile(t *testing.T) {
	t.Parallel()
	u := serveTruth(t, "--profile", "fast", "--model", "truth", "--step-base-ms", "4", "--cpu-us-per-seq", "40",
		"--prefill-us-per-token", "4", "--decode-us-per-seq", "150", "--decode-ns-per-context-token", "200", "--num-gpu-blocks", "3000")
	path := filepath.Join(t.TempDir(), "truth.yaml")
	root := newRootCmd()
	root.SetArgs([]string{"sim", "calibrate", "--observe", u, "--base", "fast", "--budget", "20s", "--rounds", "2",
		"--max-concurrency", "4", "--profile-file", path, "--hardware", "loopback test"})
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.ExecuteContext(t.Context())
	if !strings.Contains(stderr.String(), "probe: round 2 group 6/6") {
		t.Errorf("no progress for the last group on stderr:\n%s", stderr.String())
	}
	if err != nil && exitCode(err) != ExitFailed {
		t.Fatalf("calibrate: %v\n%s", err, stderr.String())
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, want := range []string{"url: " + u, "model: truth", "hardware: loopback test", "seed: 1", "held_out_error:", "base: fast"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("profile file lacks %q:\n%s", want, data)
		}
	}
	t.Logf("stdout:\n%s", stdout.String())
	checkOverloadFlag(t, data)
	if err != nil {
		t.Logf("marked unfit on this host: %v", err)
		serve := newRootCmd()
		serve.SetArgs([]string{"sim", "serve", "--port", "0", "--profile-file", path})
		serve.SetOut(io.Discard)
		serve.SetErr(io.Discard)
		if err := serve.ExecuteContext(t.Context()); exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "unfit") {
			t.Errorf("sim serve --profile-file with an unfit profile: %v, want a usage error naming it unfit", err)
		}
		return
	}
	serveTruth(t, "--profile-file", path) // the calibrated file serves
	p, perr := sim.ParseProfileFile(data)
	if perr != nil {
		t.Fatal(perr)
	}
	if p.NumGPUBlocks != 3000 {
		t.Errorf("num_gpu_blocks %d, want the server's 3000 (from vllm:cache_config_info)", p.NumGPUBlocks)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"step_base_ms", p.StepBaseMs, 4}, {"cpu_us_per_seq", p.CPUUsPerSeq, 40}, {"prefill_us_per_token", p.PrefillUsPerToken, 4},
		{"decode_us_per_seq", p.DecodeUsPerSeq, 150}, {"decode_ns_per_context_token", p.DecodeNsPerContextToken, 200}} {
		t.Logf("%s fitted %.4g, truth %.4g (%+.1f %%)", c.name, c.got, c.want, 100*(c.got-c.want)/c.want)
		if math.IsNaN(c.got) {
			t.Errorf("%s is NaN", c.name)
		}
	}
}

// checkOverloadFlag checks a profile file's host-load verdict against its
// own counts: marked "host overloaded" exactly when more than half the
// probe groups ran late, or fewer than 3 ran on time, of 3 or more that
// completed (fewer is the budget's verdict, not the host's). Over loopback
// the host's load decides which; the verdict must follow the counts.
func checkOverloadFlag(t *testing.T, data []byte) {
	t.Helper()
	var f sim.ProfileFile
	if err := yaml.Unmarshal(data, &f); err != nil || f.Calibration == nil {
		t.Fatalf("profile file: %v\n%s", err, data)
	}
	c := f.Calibration
	late := c.Groups >= 3 && (c.Overloaded*2 > c.Groups || c.Groups-c.Overloaded < 3)
	if flagged := strings.Contains(c.Unfit, "host overloaded"); flagged != late {
		t.Errorf("%d of %d groups ran late, yet host overloaded is %v: %q", c.Overloaded, c.Groups, flagged, c.Unfit)
	}
	t.Logf("%d of %d probe groups ran late; HTTP path %.3g ms; held-out %v", c.Overloaded, c.Groups, c.HTTPOverheadMs, c.HeldOutError)
}

// Ctrl-C during the probe writes nothing: no profile file, no temporary
// file beside it, and the exit code says interrupted.
func TestSimCalibrateObserveInterruptedWritesNothing(t *testing.T) {
	t.Parallel()
	u := serveTruth(t, "--profile", "fast", "--model", "truth")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &cancelOn{want: "probe: round 1 group 1/", cancel: cancel}
	root := newRootCmd()
	root.SetArgs([]string{"sim", "calibrate", "--observe", u, "--base", "fast", "--budget", "1m", "--max-concurrency", "2",
		"--profile-file", filepath.Join(dir, "p.yaml")})
	root.SetOut(io.Discard)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil || exitCode(err) != ExitInterrupted {
		t.Fatalf("interrupted calibrate returned %v (exit %d), want exit %d\n%s", err, exitCode(err), ExitInterrupted, stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("an interrupted calibration left %v", ents)
	}
}

func TestSimCalibrateObserveRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--observe", "localhost:8000", "--profile-file", "x.yaml"},
		{"--observe", "http://127.0.0.1:1"},
		{"--observe", "http://127.0.0.1:1", "--profile-file", "x.yaml", "--budget", "0s"},
		{"--observe", "http://127.0.0.1:1", "--profile-file", "x.yaml", "--vidur", "d"},
		{"--observe", "http://127.0.0.1:1", "--profile-file", "x.yaml", "--name", "t"},
		{"--from-ledger", "--ledger", "nosuch.db", "--profile-file", "x.yaml", "--base", "nosuch"},
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"sim", "calibrate"}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		if err := root.ExecuteContext(t.Context()); exitCode(err) != ExitUsage {
			t.Errorf("%v: %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
}
