package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
)

// helperOptions runs this test binary in the given mode as every worker.
func helperOptions(t *testing.T, mode string) Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Command:         fmt.Sprintf("'%s' %s {port}", exe, mode),
		Env:             map[string]string{helperEnv: "1", "HELPER_ROLE": "{role}-{rank}", "HELPER_INDEX": "{index}"},
		StartupTimeout:  20 * time.Second,
		StopGracePeriod: 10 * time.Second,
		LogDir:          t.TempDir(),
	}
}

func provision(t *testing.T, opts Options, topo target.Topology) (*target.Deployment, error) {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return p.Provision(ctx, topo)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gone reports whether pid no longer runs (absent, or a zombie whose parent
// has not reaped it yet).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// waitGone polls until pid is gone, bounded by 10 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising
	}
}

func TestProvisionPDWorkersAndStopGracefully(t *testing.T) {
	t.Parallel()
	topo := target.Topology{Prefill: 1, Decode: 2, Engine: engine.Config{Model: "m"}}
	d, err := provision(t, helperOptions(t, "serve"), topo)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(d.URLs(target.Prefill)); got != 1 {
		t.Errorf("prefill URLs = %d, want 1", got)
	}
	if got := len(d.URLs(target.Decode)); got != 2 {
		t.Errorf("decode URLs = %d, want 2", got)
	}
	var pids []int
	seen := map[string]bool{}
	for i, w := range d.Workers {
		if seen[w.URL] {
			t.Errorf("URL %s used twice", w.URL)
		}
		seen[w.URL] = true
		var pid, child int
		var role, index string
		if _, err := fmt.Sscanf(get(t, w.URL+"/info"), "%d %d %s %s", &pid, &child, &role, &index); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s-%d", w.Role, w.Rank); role != want {
			t.Errorf("worker %d env HELPER_ROLE = %q, want %q", i, role, want)
		}
		if index != fmt.Sprint(i) {
			t.Errorf("worker %d env HELPER_INDEX = %q", i, index)
		}
		pids = append(pids, pid)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, w := range d.Workers {
		if log := readLog(t, w.LogPath); !strings.Contains(log, "graceful shutdown") {
			t.Errorf("worker %s did not see SIGTERM; log:\n%s", w, log)
		}
		if !gone(pids[i]) {
			t.Errorf("worker %s (pid %d) still running after Close", w, pids[i])
		}
	}
}

func TestStopKillsGroupAfterGracePeriod(t *testing.T) {
	t.Parallel()
	opts := helperOptions(t, "stubborn")
	opts.StopGracePeriod = 200 * time.Millisecond
	d, err := provision(t, opts, target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	w := d.Workers[0]
	var pid, child int
	var role, index string
	if _, err := fmt.Sscanf(get(t, w.URL+"/info"), "%d %d %s %s", &pid, &child, &role, &index); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Errorf("worker pid %d survived Close", pid)
	}
	waitGone(t, child) // the worker's own child, killed with the group
	if log := readLog(t, w.LogPath); !strings.Contains(log, "ignoring SIGTERM") {
		t.Errorf("SIGTERM was not sent before SIGKILL; log:\n%s", log)
	}
}

// waitForLog polls path until it contains want n times, bounded by 20 s.
func waitForLog(t *testing.T, path, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for b, _ := os.ReadFile(path); strings.Count(string(b), want) < n; b, _ = os.ReadFile(path) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d × %q not seen:\n%s", path, n, want, b)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising
	}
}

// A worker that never turns healthy fails with the startup timeout, the
// last probe's answer and its log's tail. The test fires the timeout
// itself once the worker has answered probes, so how long the helper takes
// to start on a loaded machine does not matter.
func TestStartupTimeoutReportsLogTail(t *testing.T) {
	t.Parallel()
	opts := helperOptions(t, "unhealthy")
	opts.StartupTimeout = time.Second // named in the reason; the test fires it
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	timeouts := make(chan func(), 2)
	p.afterFunc = func(d time.Duration, f func()) func() bool {
		if d != time.Second {
			t.Errorf("startup timer of %v, want the 1s startup timeout", d)
		}
		timeouts <- f
		return func() bool { return true }
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Provision(t.Context(), target.Topology{Replicas: 2, Engine: engine.Config{Model: "m"}})
		done <- err
	}()
	// Two probes answered: the first 503 has reached the prober.
	for _, log := range []string{"collocated-0.log", "collocated-1.log"} {
		waitForLog(t, filepath.Join(opts.LogDir, log), "health probed", 2)
	}
	for range 2 {
		(<-timeouts)()
	}
	err = <-done
	var se *target.StartupError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *target.StartupError", err)
	}
	if !strings.Contains(se.Reason, "not healthy after 1s") {
		t.Errorf("reason = %q", se.Reason)
	}
	if se.Err == nil || !strings.Contains(se.Err.Error(), "503") {
		t.Errorf("cause = %v, want the 503 of the last probe", se.Err)
	}
	if !strings.Contains(se.LogTail, "loading weights") {
		t.Errorf("log tail = %q", se.LogTail)
	}
	var pid int
	if _, err := fmt.Sscanf(se.LogTail, "pid=%d", &pid); err != nil {
		t.Fatalf("no pid in log tail: %v", err)
	}
	if !gone(pid) {
		t.Errorf("unhealthy worker pid %d left running", pid)
	}
}

func TestCrashAtStartIsTyped(t *testing.T) {
	t.Parallel()
	_, err := provision(t, helperOptions(t, "crash"), target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	var se *target.StartupError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *target.StartupError", err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("cause = %v, want exit status 3", se.Err)
	}
	if se.Reason != "exited during startup" || !strings.Contains(se.LogTail, "boom: cannot load model weights") {
		t.Errorf("reason %q, tail %q", se.Reason, se.LogTail)
	}
	if !strings.Contains(err.Error(), "boom") {
		t.Errorf("error text lacks the log tail: %v", err)
	}
}

func TestMissingExecutable(t *testing.T) {
	t.Parallel()
	opts := helperOptions(t, "serve")
	opts.Command = "/nonexistent/autoinfer-no-such-binary --port {port}"
	_, err := provision(t, opts, target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	var se *target.StartupError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "could not start") {
		t.Fatalf("err = %v, want a StartupError naming the start failure", err)
	}
}

func TestCancelledProvisionStopsWorkers(t *testing.T) {
	t.Parallel()
	opts := helperOptions(t, "unhealthy")
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := p.Provision(ctx, target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
		done <- err
	}()
	log := opts.LogDir + "/collocated-0.log"
	waitForLog(t, log, "loading weights", 1)
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var pid int
	if _, err := fmt.Sscanf(readLog(t, log), "pid=%d", &pid); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Errorf("worker pid %d left running after cancelled provisioning", pid)
	}
}

func TestRestartKillsAndRestartsOnSameURL(t *testing.T) {
	t.Parallel()
	d, err := provision(t, helperOptions(t, "serve"), target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	w := d.Workers[0]
	var pid1, pid2, child int
	var role, index string
	if _, err := fmt.Sscanf(get(t, w.URL+"/info"), "%d %d %s %s", &pid1, &child, &role, &index); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := d.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(get(t, w.URL+"/info"), "%d %d %s %s", &pid2, &child, &role, &index); err != nil {
		t.Fatal(err)
	}
	if pid1 == pid2 || !gone(pid1) {
		t.Errorf("pids %d → %d: the old process must be gone and a new one serve", pid1, pid2)
	}
	log := readLog(t, w.LogPath)
	if strings.Count(log, "mode=serve") != 2 || strings.Contains(log, "graceful shutdown") {
		t.Errorf("log should hold both runs and no graceful stop (the restart is a crash):\n%s", log)
	}
	// After Close a Restart (a chaos step racing with Ctrl-C) starts nothing.
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(ctx, 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Restart after Close: %v, want an error saying the deployment is closed", err)
	}
	if n := strings.Count(readLog(t, w.LogPath), "mode=serve"); n != 2 {
		t.Errorf("Restart after Close started a worker (%d runs in the log, want 2)", n)
	}
}

// A worker killed from outside is an exit with its signal and the end of
// its log (what it printed before it died); after a deliberate Restart it
// is not.
func TestExitsReportKilledWorker(t *testing.T) {
	t.Parallel()
	d, err := provision(t, helperOptions(t, "serve"), target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	var pid, child int
	var role, index string
	if _, err := fmt.Sscanf(get(t, d.Workers[0].URL+"/info"), "%d %d %s %s", &pid, &child, &role, &index); err != nil {
		t.Fatal(err)
	}
	if ex := d.Exits(); len(ex) != 0 {
		t.Fatalf("exits of a healthy deployment: %+v", ex)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ex []target.Exit
	for deadline := time.Now().Add(10 * time.Second); len(ex) == 0 && time.Now().Before(deadline); {
		ex = d.Exits()
		time.Sleep(5 * time.Millisecond) // polling the exit, not synchronising on it
	}
	if len(ex) != 1 || ex[0].Signal != "killed" || ex[0].ExitCode != -1 {
		t.Fatalf("exits %+v, want one worker killed by a signal", ex)
	}
	if want := fmt.Sprintf("pid=%d mode=serve", pid); !strings.Contains(ex[0].LogTail, want) {
		t.Errorf("exit's log tail %q, want the worker's line %q", ex[0].LogTail, want)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := d.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if ex := d.Exits(); len(ex) != 0 {
		t.Fatalf("exits after a restart: %+v", ex)
	}
}
