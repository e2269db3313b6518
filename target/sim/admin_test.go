package sim_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// Without EnableAdmin (sim serve's default) the admin routes answer 404
// naming the flag, and a crash request crashes nothing (issue 13: a crash
// fault posted through a router stopped a worker).
func TestAdminRoutesOffByDefault(t *testing.T) {
	t.Parallel()
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.New(sim.Options{Engine: engine.Config{Model: simtest.DefaultModel}, Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v (a crash here means the admin route was live)", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, url+"/admin/faults", strings.NewReader(`{"crash":true}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "--enable-admin") {
			t.Errorf("%s /admin/faults with admin off: %d %s; want 404 naming --enable-admin", method, resp.StatusCode, body)
		}
	}
	if code, _ := get(t, url+"/health"); code != http.StatusOK {
		t.Errorf("health after the refused crash: %d", code)
	}
	if srv.Faults().Crash {
		t.Error("the crash fault was set although admin is off")
	}
}

// refuse_connections, set over HTTP, cuts every other request but can be
// cleared through the port it breaks: the admin channel is never locked out.
func TestRefuseConnectionsKeepsAdminReachable(t *testing.T) {
	t.Parallel()
	w := simtest.StartStoppable(t, sim.Options{})
	if code, body := post(t, w.URL+"/admin/faults", map[string]any{"refuse_connections": true}); code != http.StatusOK {
		t.Fatalf("setting refuse_connections: %d %s", code, body)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"/health", "/v1/models", "/metrics"} {
		resp, err := fresh.Get(w.URL + path)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s answered %d while refusing connections", path, resp.StatusCode)
		}
	}
	resp, err := fresh.Post(w.URL+"/admin/faults", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("clearing the fault over a new connection: %v", err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("clearing the fault: %d %s", resp.StatusCode, body)
	}
	if resp, err := fresh.Get(w.URL + "/health"); err != nil {
		t.Fatalf("health after clearing: %v", err)
	} else {
		resp.Body.Close()
	}
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	return string(b)
}
