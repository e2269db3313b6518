package router

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// Issue 35, acceptance 2: the body budget counts every copy the router
// keeps, so its resident memory under cache_aware stays within
// max_body_memory plus a fixed overhead, and goes back near its idle level
// after large requests. The router runs in its own process (this test
// binary again), so its resident memory is its own, not the client's.

// memoryOverhead is the fixed overhead docs/router.md states: resident
// memory beyond max_body_memory (the runtime, buffers, connections, the
// garbage collector's slack).
const memoryOverhead = 160 << 20

// settledSlack is how far above its idle level the router's resident
// memory may stay once large requests are over.
const settledSlack = 64 << 20

const memoryChildEnv = "AUTOINFER_ROUTER_MEMORY_CHILD"

// TestRouterMemoryChild is the router process of the memory measurement;
// it runs only when the parent starts it.
func TestRouterMemoryChild(t *testing.T) {
	worker := os.Getenv(memoryChildEnv)
	if worker == "" {
		t.Skip("the router process of TestAcceptanceRouterMemoryWithinBudget")
	}
	cfg := DefaultConfig() // cache_aware, max_body_memory 1 GiB
	cfg.WorkerURLs = []string{worker}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }() // the parent closes stdin to stop it
	if err := r.Serve(ctx, ln); err != nil {
		t.Fatal(err)
	}
}

// rss reads a process's resident memory now and at its peak (VmRSS,
// VmHWM), in bytes.
func rss(pid int) (now, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		kb, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch {
		case k == "VmRSS" && perr == nil:
			now = kb << 10
		case k == "VmHWM" && perr == nil:
			peak = kb << 10
		}
	}
	return now, peak, nil
}

type bodyMemory struct{ idle, peak, settled int64 }

// measureBodyMemory starts a router process (cache_aware, defaults) in
// front of an upstream that discards bodies, sends it three 200 MiB
// completion bodies at once, and reads its resident memory: idle before,
// peak, and settled (polled until within settledSlack of idle, at most
// 10 s).
func measureBodyMemory(tb testing.TB) bodyMemory {
	tb.Helper()
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"text":"x"}]}`)
	})}
	uln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = up.Serve(uln) }()
	tb.Cleanup(func() { _ = up.Close() })

	cmd := exec.Command(os.Args[0], "-test.run=^TestRouterMemoryChild$")
	cmd.Env = append(os.Environ(), memoryChildEnv+"=http://"+uln.Addr().String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var base string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			base = u
			break
		}
	}
	if base == "" {
		tb.Fatalf("router process did not listen: %v", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	c := routertest.NewClient(tb)
	routertest.Eventually(tb, hangBound, func() error {
		if res := c.Get(base + "/readiness"); res.Status != http.StatusOK {
			return fmt.Errorf("readiness %d", res.Status)
		}
		return nil
	})
	var m bodyMemory
	if m.idle, _, err = rss(cmd.Process.Pid); err != nil {
		tb.Fatal(err)
	}
	body := []byte(`{"model":"m","prompt":"` + strings.Repeat("the quick brown fox ", 200<<20/20) + `"}`)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(body))
			resp, err := c.HTTP().Do(req)
			if err != nil {
				tb.Errorf("200 MiB request %d: %v", i, err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				tb.Errorf("200 MiB request %d: status %d", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	if _, m.peak, err = rss(cmd.Process.Pid); err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m.settled, _, err = rss(cmd.Process.Pid); err != nil {
			tb.Fatal(err)
		}
		if m.settled <= m.idle+settledSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return m
}

func TestAcceptanceRouterMemoryWithinBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("resident memory under -race is the race detector's (shadow memory)")
	}
	if testing.Short() {
		t.Skip("sends 600 MiB of bodies")
	}
	m := measureBodyMemory(t)
	const budget = 1 << 30 // the default max_body_memory the child runs with
	t.Logf("router resident memory: idle %d MiB, peak %d MiB (bound %d MiB), settled %d MiB",
		m.idle>>20, m.peak>>20, (budget+memoryOverhead)>>20, m.settled>>20)
	if m.peak > budget+memoryOverhead {
		t.Errorf("peak resident memory %d MiB over max_body_memory + overhead (%d MiB)", m.peak>>20, (budget+memoryOverhead)>>20)
	}
	if m.settled > m.idle+settledSlack {
		t.Errorf("resident memory %d MiB 10 s after the requests, idle was %d MiB", m.settled>>20, m.idle>>20)
	}
}

// BenchmarkBodyMemory prints the router's peak and settled resident
// memory under three concurrent 200 MiB bodies (make bench).
func BenchmarkBodyMemory(b *testing.B) {
	for b.Loop() {
		m := measureBodyMemory(b)
		b.ReportMetric(float64(m.peak)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(m.settled)/(1<<20), "settled-rss-MiB")
		b.ReportMetric(float64(m.idle)/(1<<20), "idle-rss-MiB")
	}
}
