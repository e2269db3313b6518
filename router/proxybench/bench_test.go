package proxybench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scenario is one closed-loop load: a body and a concurrency.
type scenario struct {
	name string
	body string // file
	c    int
}

// BenchmarkProxyOverhead runs the trivial upstream directly and behind the
// router (round_robin), nginx, HAProxy and httputil.ReverseProxy, each in
// its own process, and measures in three interleaved runs (the order of
// targets rotates between runs):
//
//   - CPU per request of each proxy process at c=16 with a small body and
//     with a 2k-token prompt, and requests/s at c=16 and c=64;
//   - streaming time to first byte added over the direct connection
//     (sequential requests; the upstream pauses after its first event, so a
//     proxy that buffered the stream would show it).
//
// It prints every figure as a ratio to nginx's (median over the runs of
// the per-run ratio) and the load average around the run: the machines are
// shared, so absolute figures move with other work while ratios taken
// side by side in one run hold better. AUTOINFER_PROXYBENCH_SECONDS sets the
// length of each load (default 3); AUTOINFER_PROXYBENCH_BASE=path adds the
// router of another build of this package (go test -c ./router/proxybench
// in a checkout of the base) as the peer router_base.
//
//	make bench-peers   # installs nginx, haproxy, wrk; then runs:
//	go test -run '^$' -bench ProxyOverhead -benchtime 1x ./router/proxybench/
func BenchmarkProxyOverhead(b *testing.B) {
	ctx := b.Context()
	dur := 3 * time.Second
	if s := os.Getenv("AUTOINFER_PROXYBENCH_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("AUTOINFER_PROXYBENCH_SECONDS=%q: want a whole number of seconds ≥ 1", s)
		}
		dur = time.Duration(n) * time.Second
	}
	upAddr := freeAddr(b)
	direct := start(b, "direct", "http://"+upAddr, self(ctx, b, "upstream", upAddr))
	targets := []*proc{direct}
	var missing []string
	for _, name := range []string{"router", "router_base", "nginx", "haproxy", "httputil"} {
		if p, ok := peer(ctx, b, name, upAddr); ok {
			targets = append(targets, p)
		} else if name != "router_base" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		b.Logf("not installed, not measured: %s (make bench-peers installs them)", strings.Join(missing, ", "))
	}
	dir := b.TempDir()
	small, big := writeBody(b, dir, "small.json", 1), writeBody(b, dir, "2k.json", 2000)
	streamBody := []byte(`{"model":"m","prompt":"hello","max_tokens":2,"stream":true}`)
	scenarios := []scenario{{"small_c16", small, 16}, {"2k_c16", big, 16}, {"small_c64", small, 64}}
	gen := newGenerator(b)

	const runs, ttfbRequests = 3, 100
	samples := map[string]map[string][]sample{} // scenario → target → per run
	ttfbs := map[string][][]time.Duration{}     // target → per run
	loadBefore := loadAvg()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
	for b.Loop() {
		for run := range runs {
			order := append(append([]*proc{}, targets[run%len(targets):]...), targets[:run%len(targets)]...)
			for _, sc := range scenarios {
				if samples[sc.name] == nil {
					samples[sc.name] = map[string][]sample{}
				}
				for _, t := range order {
					s := gen.run(ctx, b, t, t.base+"/v1/completions", sc.body, sc.c, dur)
					samples[sc.name][t.name] = append(samples[sc.name][t.name], s)
				}
			}
			perRun := map[string][]time.Duration{}
			for range ttfbRequests {
				for _, t := range order {
					d, err := ttfb(ctx, client, t.base+"/v1/completions", streamBody)
					if err != nil {
						b.Fatalf("streaming through %s: %v\n%s", t.name, err, t.log)
					}
					perRun[t.name] = append(perRun[t.name], d)
				}
			}
			for name, ds := range perRun {
				ttfbs[name] = append(ttfbs[name], ds)
			}
		}
	}
	b.StopTimer()
	b.Logf("load generator: %s; %d runs of %s per target and scenario; load average before %s, after %s (2 cores shared with other work)",
		gen.name(), runs, dur, loadBefore, loadAvg())
	report(b, targets, scenarios, samples, ttfbs)
}

// report prints the table and the ratios to nginx as benchmark metrics.
func report(b *testing.B, targets []*proc, scenarios []scenario, samples map[string]map[string][]sample, ttfbs map[string][][]time.Duration) {
	_, haveNginx := samples[scenarios[0].name]["nginx"]
	addedTTFB := func(name string, run int) time.Duration {
		return median(ttfbs[name][run]) - median(ttfbs["direct"][run])
	}
	ratio := func(per func(run int) float64) float64 {
		var rs []float64
		for run := range len(ttfbs["direct"]) {
			rs = append(rs, per(run))
		}
		return median(rs)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-11s", "target")
	for _, sc := range scenarios {
		fmt.Fprintf(&sb, " %14s %12s", sc.name+" cpu/req", "req/s")
	}
	fmt.Fprintf(&sb, " %14s\n", "added TTFB")
	for _, t := range targets {
		fmt.Fprintf(&sb, "%-11s", t.name)
		for _, sc := range scenarios {
			ss := samples[sc.name][t.name]
			var cpu, rps []float64
			for _, s := range ss {
				cpu, rps = append(cpu, float64(s.cpuPerReq().Nanoseconds())/1e3), append(rps, s.rps())
			}
			fmt.Fprintf(&sb, " %12.1fµs %12.0f", median(cpu), median(rps))
		}
		var added []time.Duration
		for run := range ttfbs[t.name] {
			added = append(added, addedTTFB(t.name, run))
		}
		fmt.Fprintf(&sb, " %12dµs\n", median(added).Microseconds())
	}
	sb.WriteString("(direct: the upstream's own CPU per request and TTFB; the others: the proxy process alone.)\n")
	if !haveNginx {
		b.Log(sb.String() + "nginx is not installed: no ratios (make bench-peers).")
		return
	}
	sb.WriteString("\nratios to nginx (median of per-run ratios):\n")
	for _, t := range targets[1:] {
		if t.name == "nginx" {
			continue
		}
		for _, sc := range scenarios {
			cpuR := ratio(func(run int) float64 {
				return float64(samples[sc.name][t.name][run].cpuPerReq()) / float64(samples[sc.name]["nginx"][run].cpuPerReq())
			})
			rpsR := ratio(func(run int) float64 {
				return samples[sc.name][t.name][run].rps() / samples[sc.name]["nginx"][run].rps()
			})
			fmt.Fprintf(&sb, "  %-11s %-10s cpu/req %.2f×  req/s %.2f×\n", t.name, sc.name, cpuR, rpsR)
			if t.name == "router" {
				b.ReportMetric(cpuR, "router_cpu_vs_nginx_"+sc.name)
				b.ReportMetric(rpsR, "router_rps_vs_nginx_"+sc.name)
			}
		}
		ttfbR := ratio(func(run int) float64 {
			return float64(addedTTFB(t.name, run)) / float64(max(addedTTFB("nginx", run), time.Microsecond))
		})
		fmt.Fprintf(&sb, "  %-11s added streaming TTFB %.2f×\n", t.name, ttfbR)
		if t.name == "router" {
			b.ReportMetric(ttfbR, "router_added_ttfb_vs_nginx")
		}
	}
	b.Log(sb.String())
	b.ReportMetric(0, "ns/op") // one iteration is the whole experiment
}

// writeBody writes a completions body whose prompt has about tokens tokens
// (natural-looking words, ~4 bytes per token) and returns its path.
func writeBody(tb testing.TB, dir, name string, tokens int) string {
	tb.Helper()
	words := []string{"the", "model", "serves", "requests", "with", "a", "shared", "prefix", "cache", "and", "router", "latency"}
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for i := range tokens {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[r.IntN(len(words))])
	}
	b, err := json.Marshal(map[string]any{"model": "m", "prompt": sb.String(), "max_tokens": 1})
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
