package adapter

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/cmd/clitest"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// binDir holds the autoinfer binary the tests build; TestMain creates it
// and removes it after the tests.
var binDir string

// builtBinary builds this repository's binary once for all the tests that
// run it as a child process.
var builtBinary = sync.OnceValues(func() (string, error) {
	return clitest.Build(binDir)
})

// parallelTests is how many tests run at once unless -test.parallel is
// given. The trials here lift the host-overload bounds (newTestRunner), so
// more of them than GOMAXPROCS can share the machine: the long chaos trial
// starts with the others instead of queueing behind them. Under the race
// detector every request costs several times the CPU (and the chaos
// trial's 0.1 s health probes time out when six trials share two cores),
// so there GOMAXPROCS (go test's default) run at once.
const parallelTests = 6

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && !raceDetector {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	dir, err := os.MkdirTemp("", "autoinfer-adapter-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildAutoinfer returns the binary for a test that runs it.
func buildAutoinfer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the autoinfer binary")
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Acceptance 9: a process target that launches `autoinfer sim serve`
// workers passes the same trial as the in-process sim target, with the same
// request stream and the same tokens.
func TestProcessTargetMatchesSimTarget(t *testing.T) {
	t.Parallel()
	bin := buildAutoinfer(t)
	r, _ := newTestRunner(t)
	simSpec := fmt.Sprintf(tinySpec, "round_robin")
	procSpec := strings.Replace(simSpec, "target: {kind: sim, profile: fast}", fmt.Sprintf(`target:
  kind: process
  hardware: test-host
  command: "'%s' sim serve --host {host} --port {port} --model {model} --profile fast {engine_args}"
  startup_timeout: 30s
  stop_grace_period: 5s
  log_dir: %s`, bin, t.TempDir()), 1)
	procSpec = strings.Replace(procSpec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	simSpec = strings.Replace(simSpec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	a := runOK(t, r, parseSpec(t, simSpec)[0])
	b := runOK(t, r, parseSpec(t, procSpec)[0])
	if a.Summary.StreamHash != b.Summary.StreamHash || a.Summary.SentHash != b.Summary.SentHash {
		t.Fatalf("streams differ: sim %s/%s, process %s/%s", a.Summary.StreamHash, a.Summary.SentHash, b.Summary.StreamHash, b.Summary.SentHash)
	}
	if a.Summary.Completed != b.Summary.Completed || a.Summary.TotalOutputTokens != b.Summary.TotalOutputTokens ||
		a.Summary.TotalInputTokens != b.Summary.TotalInputTokens {
		t.Fatalf("sim: %d completed, %d in, %d out; process: %d, %d, %d", a.Summary.Completed, a.Summary.TotalInputTokens,
			a.Summary.TotalOutputTokens, b.Summary.Completed, b.Summary.TotalInputTokens, b.Summary.TotalOutputTokens)
	}
}

// Issue 35 acceptance 7, process target: a worker that exits on a bad
// flag fails the trial (WorkerStartupFailed, exit 3 from the CLI) with its
// log line in the failure's message and in the row.
func TestProcessBadFlagLogLineInFailure(t *testing.T) {
	t.Parallel()
	bin := buildAutoinfer(t)
	r, led := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "target: {kind: sim, profile: fast}", fmt.Sprintf(`target:
  kind: process
  hardware: test-host
  command: "'%s' sim serve --host {host} --port {port} --model {model} --profile fast --bogus-flag {engine_args}"
  startup_timeout: 30s
  log_dir: %s`, bin, t.TempDir()), 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	const line = "unknown flag: --bogus-flag"
	if out.Failure == nil || out.Failure.Kind() != failure.KindWorkerStartupFailed || !strings.Contains(out.Failure.Error(), line) {
		t.Fatalf("failure %v, want WorkerStartupFailed with %q", out.Failure, line)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := row.Failure.(failure.WorkerStartupFailed); !ok || !strings.Contains(f.LogTail, line) || f.ExitCode == 0 {
		t.Fatalf("row failure %#v, want its log_tail to hold %q and the exit code", row.Failure, line)
	}
	t.Logf("failure: %v", out.Failure)
}

// The router can run as `autoinfer router serve` (launch: process) and as
// an external vllm-router-compatible binary with flags derived from the
// config (launch: external, here autoinfer's own binary); both serve the
// trial, and the external router really ran the configured policy.
func TestRouterLaunchModes(t *testing.T) {
	t.Parallel()
	bin := buildAutoinfer(t)
	modes := map[string]string{
		"process":  "launch: process",
		"external": "launch: external, binary: \"'" + bin + "' router serve\"",
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, led := newTestRunner(t)
			r.opts.Binary = bin
			spec := strings.Replace(fmt.Sprintf(tinySpec, "least_loaded"), "router: {policy: least_loaded}",
				"router: {policy: least_loaded, "+mode+"}", 1)
			out := runOK(t, r, parseSpec(t, spec)[0])
			if out.Router == nil || out.Router.Launch == trials.LaunchEmbedded {
				t.Fatalf("router %+v, want a child process", out.Router)
			}
			row, err := led.Get(context.Background(), out.RowID)
			if err != nil {
				t.Fatal(err)
			}
			requireZeroLoads(t, row.FinalLoads)
			if row.RouterRequests != 24 {
				t.Errorf("router counted %d requests for the run, want 24", row.RouterRequests)
			}
			// The scrape shows the decisions were made under the configured policy.
			if len(row.PolicyDecisions) != 2 {
				t.Errorf("policy decisions %v, want both workers", row.PolicyDecisions)
			}
		})
	}
}

// A router that cannot start is a typed RouterStartupFailed with a reason.
func TestRouterStartupFailureIsTyped(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "router: {policy: round_robin}",
		"router: {policy: round_robin, launch: external, binary: /nonexistent/vllm-router}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure == nil || out.Failure.Kind() != failure.KindRouterStartupFailed || !strings.Contains(out.Failure.Error(), "binary_missing") {
		t.Fatalf("failure %v, want RouterStartupFailed (binary_missing)", out.Failure)
	}
}

// warmupDone matches a warm-up progress line; done when both counts agree.
var warmupDone = regexp.MustCompile(`warmup: (\d+)/(\d+) requests`)

// Ctrl-C on `autoinfer trial run`: the CLI stops the driver, tears down,
// records an aborted row and exits 130.
func TestTrialRunInterruptedBySIGINT(t *testing.T) {
	t.Parallel()
	bin := buildAutoinfer(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "long.yaml")
	// 30 s of measured run at 200 requests/s: the interrupt comes long
	// before its end, and the aborted row's 6,000 request records (mostly
	// not_sent) are quick to write even under -race on a busy host.
	long := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "num_prompts: 24", "num_prompts: 6000", 1)
	if err := os.WriteFile(spec, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "ledger.db")
	// The deadline only matters if the expected progress line never comes.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "trial", "run", spec, "--ledger", db)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt as the measured run starts: right after the warm-up's last
	// progress line "warmup: N/N" (progress lines come at each quarter of a
	// phase; the first warm-up request is the ready check, so N may be one
	// less than the spec's count).
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if m := warmupDone.FindStringSubmatch(sc.Text()); m != nil && m[1] == m[2] {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The rest of stderr says what the CLI did after the signal; it ends
	// when the process exits, and Wait comes after the last read.
	var rest strings.Builder
	_, _ = io.Copy(&rest, stderr)
	err = cmd.Wait()
	said := strings.Join(seen, "\n") + "\n" + rest.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130; stderr:\n%s", err, said)
	}
	led, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	rows, err := led.List(context.Background(), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Status != ledger.StatusAborted {
		t.Fatalf("ledger rows %+v, want one aborted row; stderr:\n%s", rows, said)
	}
	// The CLI's notice (cmd.interruptNotice), once: the signal was seen
	// and the row is being written.
	const notice = "autoinfer: interrupted; tearing down and recording what was measured"
	if n := strings.Count(said, notice); n != 1 {
		t.Errorf("stderr says %d times that it is tearing down, want once:\n%s", n, said)
	}
}
