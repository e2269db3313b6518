package calibrate

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// lateServer fronts a simulated engine on n and reports its steps lag
// times their modelled busy time late (its /metrics says so; the engine
// itself runs on the bubble's exact clock): a host that ran the server
// late, as the server's own lag counters show it.
func lateServer(t *testing.T, n *simtest.Network, backend string, lag float64) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = n.Client().Transport
	proxy.FlushInterval = -1
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			proxy.ServeHTTP(w, r)
			return
		}
		resp, err := n.Client().Get(backend + "/metrics")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		busy := 0.0
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "autoinfer:sim_modelled_busy_seconds_total") {
				_, _ = fmt.Sscanf(l[strings.LastIndexByte(l, ' ')+1:], "%g", &busy)
			}
			if !strings.HasPrefix(l, "autoinfer:sim_step_lag_seconds_total") {
				fmt.Fprintln(w, l)
			}
		}
		fmt.Fprintf(w, "autoinfer:sim_step_lag_seconds_total{engine=\"0\"} %g\n", lag*busy)
	})
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// Acceptance 1's honesty: a fit taken while the host ran the server late
// (its steps 20 % behind schedule, as it reports) is marked unfit, naming
// the host's load, and the profile file is refused where named, rather
// than a confident profile of the host's load. The same server on time
// is fitted (TestCalibrateRecoversHiddenTruth reads its real lag, 0).
func TestCalibrateRefusesAFitOnAnOverloadedHost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{Profile: truth()})
		var progress bytes.Buffer
		res, err := Calibrate(t.Context(), Config{HTTP: n.Client(), URL: lateServer(t, n, w.URL, 0.2), Base: "fast", Seed: 7,
			Budget: time.Minute, Rounds: 1, Progress: &progress})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Unfit, "host overloaded: 10 of 10 probe groups ran late") || res.Overloaded != 10 {
			t.Fatalf("unfit %q, %d groups late; want all 10 flagged", res.Unfit, res.Overloaded)
		}
		if !strings.Contains(progress.String(), "server steps 20.0 % late") {
			t.Errorf("progress does not show the server's lag:\n%s", progress.String())
		}
		if _, err := sim.ParseProfileFile(res.File); err == nil || !strings.Contains(err.Error(), "host overloaded") {
			t.Errorf("the profile file of an overloaded fit parsed: %v", err)
		}
	})
}

// The groups the host ran late are left out of the fit while enough
// remain (at least 3, and at least half); otherwise every group is kept
// and the fit is marked unfit, with the count and an example. A server
// that reports no lag is judged by the probe's timers alone.
func TestDropOverloadedKeepsTheGroupsOnTime(t *testing.T) {
	t.Parallel()
	groups := func(loads ...Load) []Observed {
		out := make([]Observed, len(loads))
		for i, l := range loads {
			out[i] = Observed{Group: Group{Concurrency: i + 1}, Load: l}
		}
		return out
	}
	ok, lagged, timers := Load{LagRatio: 0.01, LagKnown: true}, Load{LagRatio: 0.3, LagKnown: true}, Load{TimerLate: 0.5}
	c := &Config{}
	for _, tc := range []struct {
		name       string
		obs        []Observed
		kept, late int
		unfit      bool
	}{
		{"all on time", groups(ok, ok, ok, ok), 4, 0, false},
		{"two of six late", groups(ok, lagged, ok, timers, ok, ok), 4, 2, false},
		{"four of six late", groups(lagged, lagged, ok, timers, ok, lagged), 2 + 4, 4, true},
		{"half late, three kept", groups(ok, lagged, ok, timers, ok, timers), 3, 3, false},
		{"no lag reported, timers on time", groups(Load{TimerLate: 0.02}, Load{TimerLate: 0.05}, Load{}), 3, 0, false},
		{"unknown lag is no lag", groups(Load{LagRatio: 0.9}, ok, ok), 3, 0, false},
	} {
		kept, late, why := c.dropOverloaded(tc.obs)
		if len(kept) != tc.kept || late != tc.late || (why != "") != tc.unfit {
			t.Errorf("%s: kept %d, late %d, why %q; want %d, %d, unfit %v", tc.name, len(kept), late, why, tc.kept, tc.late, tc.unfit)
		}
		for _, k := range kept {
			if !tc.unfit && k.Load.overloaded(DefaultMaxLagRatio, DefaultMaxTimerLate) != "" {
				t.Errorf("%s: kept a late group %+v", tc.name, k.Load)
			}
		}
	}
}

// pathTransport is an HTTP path of fixed length: each request reaches the
// server in after it is sent, and each read of a response body returns
// out after its bytes arrived (the way back), on the bubble's clock.
type pathTransport struct {
	base    http.RoundTripper
	in, out time.Duration
}

func (p *pathTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(p.in)
	resp, err := p.base.RoundTrip(r)
	if err == nil {
		resp.Body = &delayedBody{ReadCloser: resp.Body, d: p.out}
	}
	return resp, err
}

type delayedBody struct {
	io.ReadCloser
	d time.Duration
}

func (b *delayedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	time.Sleep(b.d)
	return n, err
}

// Behind an HTTP path of 0.6 ms in and 0.4 ms back (which the step model
// does not run) the coefficients are still recovered within 5 %, the
// path's 1 ms is measured, and with it added the held-out TTFT and
// another workload (two engines, round robin, sent over the same path)
// are predicted within 5 % on every metric.
func TestCalibrateMeasuresTheHTTPPath(t *testing.T) {
	t.Parallel()
	want := truth()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{Profile: want})
		hc := n.Client()
		hc.Transport = &pathTransport{base: hc.Transport, in: 600 * time.Microsecond, out: 400 * time.Microsecond}
		res, err := Calibrate(t.Context(), Config{HTTP: hc, URL: w.URL, Base: "fast", Seed: 7, Budget: time.Minute, Rounds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Unfit != "" {
			t.Fatalf("marked unfit: %s", res.Unfit)
		}
		for i, tr := range []float64{want.StepBaseMs, want.CPUUsPerSeq, want.PrefillUsPerToken, want.DecodeUsPerSeq, want.DecodeNsPerContextToken} {
			c := res.Fit.Coefficients[i]
			if e := math.Abs(c.Value-tr) / tr; e > 0.05 {
				t.Errorf("%s fitted %.4g ± %.2g, truth %.4g (%.1f %% off)", c.Name, c.Value, c.StdErr, tr, 100*e)
			}
		}
		if e := math.Abs(ms(res.PathOverhead)-1) / 1; e > 0.05 {
			t.Errorf("path overhead %v, want 1ms within 5 %%", res.PathOverhead)
		}
		if e := res.HeldOut[MetricTTFTP50]; e > 0.05 {
			t.Errorf("held-out TTFT p50 error %.1f %% with the path added", 100*e)
		}
		w2 := simtest.StartPipe(t, n, sim.Options{Profile: want})
		start := time.Now()
		measured := runWorkload(t, &client{http: hc, base: w.URL, model: w.Server().Model(), start: start},
			&client{http: hc, base: w2.URL, model: w2.Server().Model(), start: start})
		pred, err := Replayed(sim.Options{Profile: res.Fit.Profile, Engine: engine.Config{Model: "calibrate"}}, measured)
		if err != nil {
			t.Fatal(err)
		}
		p, m := Measure(Delayed(pred, res.PathOverhead)), Measure(measured)
		for k, e := range Errors(p, m) {
			if e > 0.05 {
				t.Errorf("another workload over the path: %s predicted %.4g, measured %.4g (%.1f %% off)", k, p[k], m[k], 100*e)
			}
		}
		t.Logf("path %v; held-out %v; other workload predicted %v measured %v", res.PathOverhead, res.HeldOut, p, m)
	})
}
