package router

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// Tests for each attack on the router that issue 13 lists. After each, the
// router must still serve and every load must be back to 0 (the env's
// cleanup checks the latter for every test).

const (
	testClientKey = "client-key"
	testWorkerKey = "worker-key"
)

var clientAuth = []string{"Authorization", "Bearer " + testClientKey}

// stillServes checks the router's health after an attack: loads at 0 and a
// keyed request answered.
func stillServes(t *testing.T, e *env, r *Router, base string, headers ...string) {
	t.Helper()
	routertest.WaitLoadsZero(t, r)
	if res := e.Post(base+"/v1/completions", `{"prompt":"after the attack"}`, headers...); res.Status != 200 {
		t.Fatalf("router no longer serves: %d %s", res.Status, res.Body)
	}
}

func call(e *env, method, url, body string, headers ...string) routertest.Response {
	return e.Call(context.Background(), method, url, body, headers...)
}

// Anyone reaching the port could add a worker of their choosing (and
// receive other clients' prompts) or remove the real ones.
func TestAttackAdminRoutesNeedTheAdminKey(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	changes := []struct{ method, path, body string }{
		{http.MethodPost, "/workers", `{"url":"http://127.0.0.1:9"}`},
		{http.MethodPost, "/add_worker?url=http://127.0.0.1:9", ""},
		{http.MethodDelete, "/workers/" + url.PathEscape(f.URL), ""},
		{http.MethodPost, "/remove_worker?url=" + url.QueryEscape(f.URL), ""},
	}

	// No admin key configured: admin routes are off for everyone.
	r, base := e.router(testConfig("round_robin", f.URL), WithSecrets(Secrets{APIKey: testClientKey}))
	for _, c := range changes {
		for _, auth := range [][]string{nil, clientAuth} {
			if res := call(e, c.method, base+c.path, c.body, auth...); res.Status != 403 || res.ErrorType() != ErrTypeAdminDisabled {
				t.Errorf("%s %s (auth %v) → %d %s, want 403 admin_disabled", c.method, c.path, auth != nil, res.Status, res.Body)
			}
		}
	}
	if ws := r.Pool().Workers(); len(ws) != 1 || ws[0].URL() != f.URL {
		t.Fatalf("worker set changed: %v", ws)
	}
	// Observability needs a key too once one is configured; probes do not.
	for _, path := range []string{"/workers", "/get_loads", "/list_workers", "/metrics"} {
		if res := e.Get(base + path); res.Status != 401 || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without a key → %d, want 401 with WWW-Authenticate", path, res.Status)
		}
		if res := call(e, http.MethodGet, base+path, "", clientAuth...); res.Status != 200 {
			t.Errorf("GET %s with the API key → %d", path, res.Status)
		}
	}
	for _, path := range []string{"/liveness", "/readiness", "/health"} {
		if res := e.Get(base + path); res.Status != 200 {
			t.Errorf("GET %s → %d, want 200 without a key", path, res.Status)
		}
	}
	stillServes(t, e, r, base, clientAuth...)

	// Admin key configured: only it changes the worker set.
	r2, base2 := e.router(testConfig("round_robin", f.URL), WithSecrets(Secrets{APIKey: testClientKey, AdminAPIKey: testAdminKey}))
	for _, c := range changes {
		for _, auth := range [][]string{nil, clientAuth, {"Authorization", "Bearer " + testAdminKey + "x"}, {"Authorization", testAdminKey}} {
			if res := call(e, c.method, base2+c.path, c.body, auth...); res.Status != 401 || res.ErrorType() != ErrTypeUnauthorized {
				t.Errorf("%s %s (auth %v) → %d %s, want 401 unauthorized", c.method, c.path, auth, res.Status, res.Body)
			}
		}
	}
	if res := call(e, http.MethodPost, base2+"/workers", `{"url":"http://127.0.0.1:9"}`, adminAuth...); res.Status != 201 {
		t.Fatalf("admin key: POST /workers → %d %s", res.Status, res.Body)
	}
	if res := call(e, http.MethodDelete, base2+"/workers/"+url.PathEscape("http://127.0.0.1:9"), "", adminAuth...); res.Status != 200 {
		t.Fatalf("admin key: DELETE /workers → %d %s", res.Status, res.Body)
	}
	stillServes(t, e, r2, base2, clientAuth...)
}

// Inference needs the API key; the OpenAI error shape says so.
func TestAttackInferenceNeedsTheAPIKey(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	r, base := e.router(testConfig("round_robin", f.URL), WithSecrets(Secrets{APIKey: testClientKey}))
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/completions", `{"prompt":"x"}`},
		{http.MethodPost, "/v1/chat/completions", `{"messages":[]}`},
		{http.MethodPost, "/v1/embeddings", `{"input":"x"}`},
		{http.MethodPost, "/generate", `{"text":"x"}`},
		{http.MethodPost, "/v1/responses", `{"input":"x"}`},
		{http.MethodGet, "/v1/models", ""},
		{http.MethodPost, "/tokenize", `{"prompt":"x"}`},
	} {
		for _, auth := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic " + testClientKey}, {"X-Api-Key", testClientKey}} {
			res := call(e, c.method, base+c.path, c.body, auth...)
			if res.Status != 401 || res.ErrorType() != ErrTypeUnauthorized {
				t.Errorf("%s %s (auth %v) → %d %s, want 401 unauthorized", c.method, c.path, auth, res.Status, res.Body)
			}
		}
	}
	if n := f.Requests.Load(); n != 0 {
		t.Fatalf("unauthenticated requests reached the worker %d times", n)
	}
	stillServes(t, e, r, base, clientAuth...)
}

// headerRecorder is a worker that records the headers of every request on every
// path, health checks included.
type headerRecorder struct {
	mu   sync.Mutex
	seen map[string][]http.Header
}

func startHeaderRecorder(t *testing.T) (*headerRecorder, string) {
	t.Helper()
	rec := &headerRecorder{seen: map[string][]http.Header{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		rec.mu.Lock()
		rec.seen[req.URL.Path] = append(rec.seen[req.URL.Path], req.Header.Clone())
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return rec, "http://" + ln.Addr().String()
}

func (rec *headerRecorder) headers(path string) []http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]http.Header(nil), rec.seen[path]...)
}

// A client's Authorization, Cookie and API-key headers reached the worker
// — and a worker added by an attacker would have collected them. Workers
// now see the router's own key, on requests and health checks alike.
func TestAttackClientCredentialsNeverReachWorkers(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	rec, u := startHeaderRecorder(t)
	cfg := testConfig("round_robin", u)
	r, base := e.router(cfg, WithSecrets(Secrets{APIKey: testClientKey, WorkerAPIKey: testWorkerKey}))
	res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "Authorization", "Bearer "+testClientKey,
		"Cookie", "session=secret", "X-Api-Key", "secret", "Api-Key", "secret", "X-Other", "kept")
	if res.Status != 200 {
		t.Fatalf("keyed request → %d %s", res.Status, res.Body)
	}
	got := rec.headers("/v1/completions")
	if len(got) != 1 {
		t.Fatalf("worker saw %d requests", len(got))
	}
	h := got[0]
	if h.Get("Authorization") != "Bearer "+testWorkerKey || h.Get("Cookie") != "" || h.Get("X-Api-Key") != "" || h.Get("Api-Key") != "" {
		t.Errorf("worker saw Authorization %q Cookie %q X-Api-Key %q Api-Key %q; want only the worker key",
			h.Get("Authorization"), h.Get("Cookie"), h.Get("X-Api-Key"), h.Get("Api-Key"))
	}
	if h.Get("X-Other") != "kept" {
		t.Error("an ordinary header was dropped")
	}
	routertest.Eventually(t, hangBound, func() error {
		probes := rec.headers("/health")
		if len(probes) == 0 {
			return fmt.Errorf("no health check yet")
		}
		if a := probes[0].Get("Authorization"); a != "Bearer "+testWorkerKey {
			return fmt.Errorf("health check carried Authorization %q, want the worker key", a)
		}
		return nil
	})
	stillServes(t, e, r, base, clientAuth...)

	// In PD mode both legs carry the router's key, not the client's.
	pre, preURL := startHeaderRecorder(t)
	dec, decURL := startHeaderRecorder(t)
	pdCfg := testConfig("round_robin")
	pdCfg.PDDisaggregation, pdCfg.KVConnector = true, "nixl"
	pdCfg.PrefillPolicy, pdCfg.DecodePolicy = "round_robin", "round_robin"
	pdCfg.PrefillURLs, pdCfg.DecodeURLs = []string{preURL}, []string{decURL}
	_, pdBase := e.router(pdCfg, WithSecrets(Secrets{APIKey: testClientKey, WorkerAPIKey: testWorkerKey}))
	if res := e.Post(pdBase+"/v1/completions", `{"prompt":"x"}`, append(clientAuth, "Cookie", "c=1")...); res.Status != 200 {
		t.Fatalf("PD request → %d %s", res.Status, res.Body)
	}
	for leg, rec := range map[string]*headerRecorder{"prefill": pre, "decode": dec} {
		hs := rec.headers("/v1/completions")
		if len(hs) != 1 || hs[0].Get("Authorization") != "Bearer "+testWorkerKey || hs[0].Get("Cookie") != "" {
			t.Errorf("%s leg saw %v", leg, hs)
		}
	}

	// Forwarding the client's credentials takes an explicit setting.
	rec2, u2 := startHeaderRecorder(t)
	cfg2 := testConfig("round_robin", u2)
	cfg2.ForwardClientAuth = true
	_, base2 := e.router(cfg2)
	e.Post(base2+"/v1/completions", `{"prompt":"x"}`, "Authorization", "Bearer theirs", "Cookie", "c=1")
	if h := rec2.headers("/v1/completions")[0]; h.Get("Authorization") != "Bearer theirs" || h.Get("Cookie") != "c=1" {
		t.Errorf("forward_client_auth: worker saw %q %q", h.Get("Authorization"), h.Get("Cookie"))
	}
}

// Pass-through reached a worker's control routes: POST /admin/faults
// {"crash":true} stopped a simulated engine through the router.
func TestAttackPassthroughReachesOnlyServingRoutes(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	r, base := e.router(testConfig("round_robin", f.URL))
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/admin/faults"}, {http.MethodPost, "/pause"}, {http.MethodPost, "/sleep"},
		{http.MethodPost, "/reset_prefix_cache"}, {http.MethodPost, "/update_weights"}, {http.MethodPost, "/collective_rpc"},
		{http.MethodGet, "/tokenize/"}, {http.MethodPost, "/tokenize%2F..%2Fadmin%2Ffaults"},
		{http.MethodGet, "/v1/responses/"}, {http.MethodGet, "/v1/responses/a%2F..%2F..%2Fadmin"},
		{http.MethodPost, "/v1/responses/..%2F..%2Fadmin%2Ffaults"},
	} {
		res := call(e, c.method, base+c.path, `{"crash":true}`)
		if res.Status != 404 || res.ErrorType() != ErrTypeNotFound {
			t.Errorf("%s %s → %d %s, want 404 not_found", c.method, c.path, res.Status, res.Body)
		}
	}
	// A ".." path is redirected to its clean form by the mux; following it
	// ends at the same 404.
	if res := call(e, http.MethodGet, base+"/tokenize/../admin/faults", ""); res.Status != 404 {
		t.Errorf("dot-dot path → %d %s", res.Status, res.Body)
	}
	if n := f.Requests.Load(); n != 0 {
		t.Fatalf("worker received %d requests on non-serving routes", n)
	}
	for _, path := range []string{"/tokenize", "/detokenize", "/v1/rerank", "/v1/responses/resp-1", "/version"} {
		if res := call(e, http.MethodPost, base+path, `{"prompt":"x"}`); res.Status != 200 {
			t.Errorf("serving route %s → %d %s", path, res.Status, res.Body)
		}
	}
	stillServes(t, e, r, base)
}

// Credentials in worker URLs showed up in /workers, /get_loads, metric
// labels, logs and error bodies. They are refused wherever a URL enters,
// and never echoed.
func TestAttackCredentialsInWorkerURLs(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	bad := []string{"http://admin:" + secret + "@127.0.0.1:1", "http://" + secret + "@127.0.0.1:1",
		"http://127.0.0.1:1/?token=" + secret, "http://127.0.0.1:1/#" + secret, "ftp://127.0.0.1:1", "http:///nohost", "127.0.0.1:1"}
	for _, u := range bad {
		cfg := testConfig("round_robin", u)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "router.worker_urls[0]") {
			t.Errorf("New with worker %q: %v, want an error naming router.worker_urls[0]", u, err)
		}
		if err != nil && strings.Contains(u, "@") && strings.Contains(err.Error(), secret) {
			t.Errorf("config error echoes the credentials: %v", err)
		}
	}

	e := loopback(t)
	f := e.worker()
	var logs syncBuffer
	r, base := e.router(testConfig("round_robin", f.URL), withAdmin(),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	for _, u := range bad {
		res := call(e, http.MethodPost, base+"/workers", fmt.Sprintf(`{"url":%q}`, u), adminAuth...)
		if res.Status != 400 || res.ErrorType() != ErrTypeInvalidRequest {
			t.Errorf("POST /workers %q → %d %s, want 400", u, res.Status, res.Body)
		}
		if strings.Contains(u, "@") && strings.Contains(res.Body, secret) {
			t.Errorf("error body echoes the credentials: %s", res.Body)
		}
		res = call(e, http.MethodPost, base+"/add_worker?url="+url.QueryEscape(u), "", adminAuth...)
		if res.Status != 400 {
			t.Errorf("add_worker %q → %d", u, res.Status)
		}
		res = call(e, http.MethodPost, base+"/remove_worker?url="+url.QueryEscape(u), "", adminAuth...)
		if strings.Contains(u, "@") && strings.Contains(res.Body, secret) {
			t.Errorf("remove_worker body echoes the credentials: %s", res.Body)
		}
	}
	e.Post(base+"/v1/completions", `{"prompt":"x"}`)
	for _, path := range []string{"/workers", "/get_loads", "/metrics"} {
		if body := call(e, http.MethodGet, base+path, "", adminAuth...).Body; strings.Contains(body, secret) {
			t.Errorf("%s shows the credentials", path)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("logs show the credentials: %s", logs.String())
	}
	if ws := r.Pool().Workers(); len(ws) != 1 {
		t.Fatalf("a refused URL joined the pool: %d workers", len(ws))
	}
	stillServes(t, e, r, base)
}

// syncBuffer collects log output written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exposed is a loopback listener that reports a non-loopback address, as
// one bound to 0.0.0.0 would, without exposing the test.
type exposed struct{ net.Listener }

func (exposed) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero, Port: 30000} }

// Binding beyond loopback without an API key prints a warning naming the
// risk; with a key, or on loopback, it does not.
func TestWarnsWhenExposedWithoutAKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		exposed bool
		secrets Secrets
		warn    bool
	}{{"exposed without a key", true, Secrets{}, true}, {"exposed with a key", true, Secrets{APIKey: "k"}, false},
		{"loopback without a key", false, Secrets{}, false}} {
		var logs syncBuffer
		r, err := New(testConfig("round_robin", "http://127.0.0.1:1"), WithSecrets(c.secrets),
			WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if c.exposed {
			ln = exposed{ln}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Serve(ctx, ln) }()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "without an API key") &&
			strings.Contains(logs.String(), "anyone who can reach it")
		if warned != c.warn {
			t.Errorf("%s: warned %v, want %v (log: %s)", c.name, warned, c.warn, logs.String())
		}
	}
}
