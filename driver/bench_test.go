package driver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// TestHelperSimServer is the child process of BenchmarkDriverVsSim: it
// serves a fast simulated engine until its stdin closes. It does nothing in
// a normal test run.
func TestHelperSimServer(t *testing.T) {
	if os.Getenv("AUTOINFER_DRIVER_SIM_CHILD") != "1" {
		t.Skip("child process helper")
	}
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.New(sim.Options{Engine: engine.Config{Model: "m"}, Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Printf("URL=http://%s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		t.Log(err)
	}
}

// startSimProcess runs the simulated engine in a child process, so the
// driver's CPU time (this process's rusage) excludes the server's.
func startSimProcess(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSimServer$")
	cmd.Env = append(os.Environ(), "AUTOINFER_DRIVER_SIM_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "URL="); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return url
		}
	}
	b.Fatal("the simulated engine did not start")
	return ""
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDriverVsSim drives a fast simulated engine (in a child process)
// with b.N Poisson arrivals at each rate (128 input, 16 output tokens) and
// reports the driver's CPU per request and its schedule delay: the highest
// rate whose sched-p99-ms stays under 2 is the driver's sustainable rate on
// this machine. Run:
//
//	go test ./driver -run '^$' -bench DriverVsSim -benchtime 2000x
func BenchmarkDriverVsSim(b *testing.B) {
	url := startSimProcess(b)
	for _, rate := range []float64{100, 400, 1600, 2400, 3200} {
		b.Run(fmt.Sprintf("rate=%v", rate), func(b *testing.B) {
			cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: b.N, WarmupRequests: -1, ReadyCheckTimeout: -1, Seed: 1,
				Workload: driver.Workload{Kind: "random", InputLen: 128, OutputLen: 16},
				Arrival:  driver.Arrival{RequestRate: rate}}
			cpu := cpuTime()
			b.ResetTimer()
			res, err := driver.Run(context.Background(), cfg)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			cpu = cpuTime() - cpu
			s := res.Summary
			if s.Failed > 0 {
				b.Fatalf("%d requests failed: %v", s.Failed, s.ErrorsByType)
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/req")
			b.ReportMetric(s.P99ScheduleDelayMs, "sched-p99-ms")
			b.ReportMetric(s.MeanScheduleDelayMs, "sched-mean-ms")
			b.ReportMetric(s.AchievedRequestRate/rate, "achieved/requested")
			b.ReportMetric(0, "ns/op")
		})
	}
}
