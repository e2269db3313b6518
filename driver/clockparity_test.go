package driver_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router/routertest"
)

// The clock-parity test (issue 28): one seeded multi_turn workload with a
// failing turn, a request that times out, a request held until the run
// stops or is cancelled, and sessions the stop cuts short, run on the wall
// clock (HTTP to a scripted server on an in-memory network, inside a
// synctest bubble so every wait is exact) and on the virtual clock (a
// scripted System with the same timeline). Both clocks must mark every
// request alike (success, stream_error, timeout, session_aborted,
// incomplete, not_sent) with the same figures, and give the same summary.

// Six sessions of four turns: request i is turn i%4 of session i/4.
const (
	parityFails   = 5  // session 1, turn 1: the stream breaks; turns 2-3 are session_aborted
	parityTimeout = 8  // session 2, turn 0: never answered, times out; turns 1-3 are session_aborted
	parityHeld    = 14 // session 3, turn 2: never answered, in flight at the stop
	parityCancel  = 17 // session 4, turn 1: its arrival cancels the run (cancellation case)
)

// parityTokens are a token's times after the request's arrival.
var parityTokens = []time.Duration{21 * time.Millisecond, 26 * time.Millisecond, 31 * time.Millisecond, 37 * time.Millisecond}

func parityConfig(url string) driver.Config {
	return driver.Config{BaseURL: url, Model: "m", Seed: 11, TrialID: "parity", RunID: "parity-run",
		WarmupRequests: -1, ReadyCheckTimeout: -1, Timeout: 300 * time.Millisecond,
		Workload: driver.Workload{Kind: "multi_turn", Sessions: 6, Turns: 4, InputLen: 8, OutputLen: 4,
			ThinkTimeMs: 150, History: "synthetic", RequestIDPrefix: "p-"},
		Arrival: driver.Arrival{Kind: "constant", RequestRate: 100, MaxConcurrency: 3}}
}

// parityPrompt is the prompt token count both servers report for a body.
func parityPrompt(body []byte) int { return len(body) % 97 }

// paritySystem is the script on the virtual clock.
type paritySystem struct {
	cancel  context.CancelFunc // cancels the run when request parityCancel arrives; nil: never
	answers []driver.Answer    // pending, each finishing at its last token (or at +21 ms without tokens)
	ends    []time.Duration
}

func (s *paritySystem) Next() (time.Duration, bool) {
	if len(s.ends) == 0 {
		return 0, false
	}
	return slices.Min(s.ends), true
}

func (s *paritySystem) Complete(at time.Duration, done func(driver.Answer)) error {
	for {
		k := -1
		for j, e := range s.ends {
			if e <= at && (k < 0 || e < s.ends[k] || e == s.ends[k] && s.answers[j].ID < s.answers[k].ID) {
				k = j
			}
		}
		if k < 0 {
			return nil
		}
		a := s.answers[k]
		s.answers, s.ends = slices.Delete(s.answers, k, k+1), slices.Delete(s.ends, k, k+1)
		done(a)
	}
}

func (s *paritySystem) Send(id int, _ string, _ http.Header, body []byte, at time.Duration) error {
	switch id {
	case parityTimeout, parityHeld:
		return nil
	case parityCancel:
		if s.cancel != nil {
			s.cancel()
			return nil
		}
	case parityFails:
		s.answers, s.ends = append(s.answers, driver.Answer{ID: id}), append(s.ends, at+parityTokens[0])
		return nil
	}
	a := driver.Answer{ID: id, PromptTokens: parityPrompt(body), CachedTokens: id}
	for _, d := range parityTokens {
		a.Tokens = append(a.Tokens, at+d)
	}
	s.answers, s.ends = append(s.answers, a), append(s.ends, a.Tokens[len(a.Tokens)-1])
	return nil
}

func (s *paritySystem) Plan() {}

// parityHandler is the script over HTTP: the same answers as SSE events at
// the same offsets from the request's arrival.
func parityHandler(cancel context.CancelFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			body.Write(buf[:n])
			if err != nil {
				break
			}
		}
		id, _ := strconv.Atoi(strings.TrimPrefix(r.Header.Get(driver.RequestIDHeader), "p-"))
		switch {
		case id == parityTimeout || id == parityHeld || id == parityCancel && cancel != nil:
			if id == parityCancel {
				cancel()
			}
			<-r.Context().Done() // held until the client goes
			return
		}
		// The status goes with the first event: a request cut short before
		// it has none, as on the virtual clock.
		w.Header().Set("Content-Type", "text/event-stream")
		last := time.Duration(0)
		for _, d := range parityTokens {
			select {
			case <-time.After(d - last):
			case <-r.Context().Done(): // the client went (the run stopped)
				return
			}
			last = d
			if id == parityFails {
				fmt.Fprint(w, "data: {broken\n\n")
				return
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a \"}]}\n\n")
			w.(http.Flusher).Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":%d}}}\n\n",
			parityPrompt([]byte(body.String())), len(parityTokens), id)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// wallRun runs cfg on the wall clock in a synctest bubble against the
// scripted server.
func wallRun(t *testing.T, adjust func(*driver.Config), cancelling bool, opts ...driver.Option) (*driver.Result, error) {
	var res *driver.Result
	var err error
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var onCancel context.CancelFunc
		if cancelling {
			onCancel = cancel
		}
		n := routertest.NewNetwork()
		ln, lerr := n.Listen("")
		if lerr != nil {
			t.Fatal(lerr)
		}
		srv := &http.Server{Handler: parityHandler(onCancel)}
		go func() { _ = srv.Serve(ln) }()
		client := n.Client(t).HTTP()
		cfg := parityConfig("http://" + ln.Addr().String())
		cfg.HTTPClient = client
		adjust(&cfg)
		res, err = driver.Run(ctx, cfg, opts...)
		client.CloseIdleConnections()
		_ = srv.Close()
		synctest.Wait()
	})
	return res, err
}

func virtualRun(t *testing.T, adjust func(*driver.Config), cancelling bool) (*driver.Result, error) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sys := &paritySystem{}
	if cancelling {
		sys.cancel = cancel
	}
	cfg := parityConfig("http://virtual.invalid:1")
	adjust(&cfg)
	return driver.Simulate(ctx, cfg, sys)
}

func TestClockParity(t *testing.T) {
	for _, c := range []struct {
		name       string
		adjust     func(*driver.Config)
		cancelling bool
		want       map[string]int // requests by status
		wantErr    error
	}{
		{name: "max_seconds", adjust: func(c *driver.Config) { c.Workload.MaxSeconds = 0.5 },
			want: map[string]int{"success": 12, "stream_error": 1, "timeout": 1, "session_aborted": 5, "incomplete": 1, "not_sent": 4}},
		{name: "cancelled", adjust: func(*driver.Config) {}, cancelling: true, wantErr: context.Canceled,
			want: map[string]int{"success": 6, "stream_error": 1, "timeout": 0, "session_aborted": 2, "incomplete": 3, "not_sent": 12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wall, werr := wallRun(t, c.adjust, c.cancelling)
			virt, verr := virtualRun(t, c.adjust, c.cancelling)
			if werr != c.wantErr || verr != c.wantErr {
				t.Fatalf("errors: wall %v, virtual %v; want %v", werr, verr, c.wantErr)
			}
			if len(wall.Requests) != 24 || len(virt.Requests) != 24 {
				t.Fatalf("records: wall %d, virtual %d; want 24", len(wall.Requests), len(virt.Requests))
			}
			got := map[string]int{}
			for i := range wall.Requests {
				w, v := wall.Requests[i], virt.Requests[i]
				ws, vs := parityStatus(w), parityStatus(v)
				got[ws]++
				if ws != vs {
					t.Errorf("request %d: wall clock %s (%s), virtual clock %s (%s)", i, ws, w.Error, vs, v.Error)
					continue
				}
				compareRecords(t, i, w, v)
			}
			for status, n := range c.want {
				if got[status] != n {
					t.Errorf("%d requests %s, want %d (all: %v)", got[status], status, n, got)
				}
			}
			compareSummaries(t, wall.Summary, virt.Summary)
		})
	}
}

// parityStatus is how a request ended: success or its error type.
func parityStatus(r driver.RequestRecord) string {
	if r.Success {
		return "success"
	}
	return r.ErrorType
}

// compareRecords checks that two records of one request agree on every
// field but the transport's own wording of an error, which only the wall
// clock has (the phase's own words, for requests it ended, must agree).
func compareRecords(t *testing.T, i int, w, v driver.RequestRecord) {
	t.Helper()
	if w.ErrorType != driver.ErrNotSent && w.ErrorType != "session_aborted" {
		w.Error, v.Error = "", ""
	}
	w.ErrorBody, v.ErrorBody = nil, nil
	if !reflect.DeepEqual(w, v) {
		t.Errorf("request %d differs:\nwall    %+v\nvirtual %+v", i, w, v)
	}
}

// compareSummaries checks every summary field but those that describe the
// client process rather than the run: the date and its scheduling latency.
func compareSummaries(t *testing.T, w, v driver.Summary) {
	t.Helper()
	w.Date, v.Date = "", ""
	w.ClientSchedP99Ms, v.ClientSchedP99Ms = 0, 0
	w.ClientLag, v.ClientLag = nil, nil
	wv, vv := reflect.ValueOf(w), reflect.ValueOf(v)
	for k := range wv.NumField() {
		if a, b := wv.Field(k).Interface(), vv.Field(k).Interface(); !reflect.DeepEqual(a, b) {
			t.Errorf("summary %s: wall clock %v, virtual clock %v", wv.Type().Field(k).Name, a, b)
		}
	}
}

// TestWallStreamedRecordsMatchKept: the wall clock's measured phase
// streamed (driver.WithRecords, a real-time trial spooling its records)
// hands over every record once, each equal to the kept run's, and
// summarises to the kept run's summary (means to the last bits: summed in
// finish order), keeping no records.
func TestWallStreamedRecordsMatchKept(t *testing.T) {
	for _, c := range []struct {
		name       string
		adjust     func(*driver.Config)
		cancelling bool
	}{
		{name: "max_seconds", adjust: func(c *driver.Config) { c.Workload.MaxSeconds = 0.5 }},
		{name: "cancelled", adjust: func(*driver.Config) {}, cancelling: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			kept, kerr := wallRun(t, c.adjust, c.cancelling)
			var got []driver.RequestRecord
			streamed, serr := wallRun(t, c.adjust, c.cancelling,
				driver.WithRecords(func(r *driver.RequestRecord) { got = append(got, *r) }, 0))
			if kerr != serr {
				t.Fatalf("errors: kept %v, streamed %v", kerr, serr)
			}
			if len(streamed.Requests) != 0 || len(got) != len(kept.Requests) {
				t.Fatalf("streamed run kept %d records and handed over %d; the kept run has %d", len(streamed.Requests), len(got), len(kept.Requests))
			}
			inOrder := true
			for i := range got {
				inOrder = inOrder && got[i].Index == i
			}
			slices.SortFunc(got, func(a, b driver.RequestRecord) int { return a.Index - b.Index })
			for i := range got {
				if got[i].Index != i {
					t.Fatalf("record %d handed over as index %d (each once)", i, got[i].Index)
				}
				compareRecords(t, i, kept.Requests[i], got[i])
			}
			if inOrder {
				t.Error("records handed over in index order: the script finishes some out of order")
			}
			k, s := kept.Summary, streamed.Summary
			for _, m := range []struct {
				name string
				a, b *float64
			}{{"mean_ttft", &k.MeanTTFTMs, &s.MeanTTFTMs}, {"mean_tpot", &k.MeanTPOTMs, &s.MeanTPOTMs},
				{"mean_itl", &k.MeanITLMs, &s.MeanITLMs}, {"mean_e2el", &k.MeanE2ELMs, &s.MeanE2ELMs},
				{"std_ttft", &k.StdTTFTMs, &s.StdTTFTMs}, {"std_tpot", &k.StdTPOTMs, &s.StdTPOTMs},
				{"std_itl", &k.StdITLMs, &s.StdITLMs}, {"std_e2el", &k.StdE2ELMs, &s.StdE2ELMs}} {
				if math.Abs(*m.a-*m.b) > 1e-9*math.Abs(*m.a) {
					t.Errorf("%s: kept %v, streamed %v", m.name, *m.a, *m.b)
				}
				*m.b = *m.a
			}
			compareSummaries(t, k, s)
		})
	}
}
