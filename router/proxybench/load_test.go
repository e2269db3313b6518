package proxybench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sample is one closed-loop measurement through one target.
type sample struct {
	ok, errors int64
	secs       float64
	cpu        time.Duration // the target process's CPU time during the run
}

func (s sample) rps() float64 { return float64(s.ok) / s.secs }

func (s sample) cpuPerReq() time.Duration { return s.cpu / time.Duration(max(s.ok, 1)) }

// wrkScript POSTs the body file and prints "RESULT ok errors seconds".
const wrkScript = `local f = assert(io.open(%q, "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("RESULT %%d %%d %%f\n", summary.requests - e.status,
		e.connect + e.read + e.write + e.status + e.timeout, summary.duration / 1e6))
end
`

// generator drives closed-loop load from its own process: wrk when it is
// installed, else the test binary's Go client.
type generator struct {
	wrk string // path, "" for the Go client
	dir string
}

func newGenerator(tb testing.TB) generator {
	g := generator{dir: tb.TempDir()}
	g.wrk, _ = exec.LookPath("wrk")
	return g
}

func (g generator) name() string {
	if g.wrk != "" {
		return "wrk"
	}
	return "Go client (wrk not installed)"
}

// run loads url with c connections for d, sending bodyFile, and reads the
// target's CPU time around it.
func (g generator) run(ctx context.Context, tb testing.TB, target *proc, url, bodyFile string, c int, d time.Duration) sample {
	tb.Helper()
	var cmd *exec.Cmd
	if g.wrk != "" {
		script := filepath.Join(g.dir, filepath.Base(bodyFile)+".lua")
		if err := os.WriteFile(script, fmt.Appendf(nil, wrkScript, bodyFile), 0o600); err != nil {
			tb.Fatal(err)
		}
		cmd = exec.CommandContext(ctx, g.wrk, "-t2", "-c"+strconv.Itoa(c), "-d"+strconv.Itoa(int(d.Seconds()))+"s", "-s", script, url)
	} else {
		cmd = self(ctx, tb, "loadgen", url, bodyFile, strconv.Itoa(c), strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	}
	cpu0, err := target.cpu()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("load generator: %v\n%s", err, out)
	}
	cpu1, err := target.cpu()
	if err != nil {
		tb.Fatal(err)
	}
	s := sample{cpu: cpu1 - cpu0}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "RESULT" {
			s.ok, _ = strconv.ParseInt(f[1], 10, 64)
			s.errors, _ = strconv.ParseInt(f[2], 10, 64)
			s.secs, _ = strconv.ParseFloat(f[3], 64)
		}
	}
	if s.ok == 0 || s.secs == 0 {
		tb.Fatalf("load generator printed no result through %s:\n%s", target.name, out)
	}
	if s.errors > 0 {
		tb.Fatalf("%d errors through %s (%d ok):\n%s\n%s", s.errors, target.name, s.ok, out, target.log)
	}
	return s
}

// ttfb sends one streaming request and returns the time from sending it to
// the first byte of the response body.
func ttfb(ctx context.Context, client *http.Client, url string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		return 0, fmt.Errorf("reading first byte: %w", err)
	}
	d := time.Since(start)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, fmt.Errorf("reading stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return d, nil
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
