package simtarget

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

func fast(t *testing.T) *Provisioner {
	t.Helper()
	p, err := New(Options{Source: Source{Profile: "fast"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// complete sends one small completion and returns the generated text.
func complete(t *testing.T, url string) string {
	t.Helper()
	body := `{"model":"m","prompt":"hello there general","max_tokens":4,"temperature":0}`
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	var out struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("bad completion %s: %v", b, err)
	}
	return out.Choices[0].Text
}

func TestProvisionServesAndCloses(t *testing.T) {
	d, err := fast(t).Provision(t.Context(), target.Topology{Replicas: 2, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	urls := d.URLs(target.Collocated)
	if len(urls) != 2 || urls[0] == urls[1] {
		t.Fatalf("urls = %v", urls)
	}
	// Same engine config, temperature 0: both replicas answer alike.
	if a, b := complete(t, urls[0]), complete(t, urls[1]); a == "" || a != b {
		t.Errorf("replicas answered %q and %q", a, b)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(urls[0] + "/health"); err == nil {
		resp.Body.Close()
		t.Errorf("worker still answers after Close")
	}
}

func TestProvisionPDRoles(t *testing.T) {
	d, err := fast(t).Provision(t.Context(), target.Topology{Prefill: 1, Decode: 2, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if len(d.URLs(target.Prefill)) != 1 || len(d.URLs(target.Decode)) != 2 {
		t.Errorf("workers = %+v", d.Workers)
	}
	// A prefill engine answers a remote-decode request with transfer params.
	body := `{"model":"m","prompt":"a b c d","max_tokens":1,"kv_transfer_params":{"do_remote_decode":true}}`
	resp, err := http.Post(d.URLs(target.Prefill)[0]+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("prefill engine: %s", resp.Status)
	}
}

func TestRestartKeepsURL(t *testing.T) {
	d, err := fast(t).Provision(t.Context(), target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	url := d.Workers[0].URL
	before := complete(t, url)
	if err := d.Restart(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if d.Workers[0].URL != url {
		t.Errorf("URL changed: %s → %s", url, d.Workers[0].URL)
	}
	if after := complete(t, url); after != before {
		t.Errorf("restarted engine answered %q, before %q", after, before)
	}
	if err := d.Restart(t.Context(), 5); err == nil {
		t.Error("Restart of a missing worker succeeded")
	}
}

// A Restart that comes after Close (say, a chaos step racing with Ctrl-C)
// must not bring back an engine that nobody would stop.
func TestRestartAfterCloseStartsNothing(t *testing.T) {
	d, err := fast(t).Provision(t.Context(), target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Restart after Close: %v, want an error saying the deployment is closed", err)
	}
	if resp, err := http.Get(d.Workers[0].URL + "/health"); err == nil {
		resp.Body.Close()
		t.Fatal("a worker answers after Close and Restart")
	}
}

func TestInvalidEngineIsStartupError(t *testing.T) {
	_, err := fast(t).Provision(t.Context(), target.Topology{Replicas: 2, Engine: engine.Config{}})
	var se *target.StartupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "engine.model") {
		t.Errorf("err = %v, want a StartupError about engine.model", err)
	}
}

func TestResolveProfile(t *testing.T) {
	base, _ := sim.LookupProfile("fast")
	p, err := ResolveProfile("fast", map[string]any{"prefill_us_per_token": 20, "num_gpu_blocks": 512})
	if err != nil {
		t.Fatal(err)
	}
	if p.PrefillUsPerToken != 20 || p.NumGPUBlocks != 512 || p.StepBaseMs != base.StepBaseMs {
		t.Errorf("profile = %+v", p)
	}
	for overrides, want := range map[string]map[string]any{
		"prefil_us_per_token: not a profile field": {"prefil_us_per_token": 1},
		"name: not a profile field":                {"name": "x"},
		"link_gbps must be > 0":                    {"link_gbps": 0},
		"cannot unmarshal":                         {"step_base_ms": "slow"},
	} {
		if _, err := ResolveProfile("fast", want); err == nil || !strings.Contains(err.Error(), overrides) {
			t.Errorf("overrides %v: err = %v, want %q", want, err, overrides)
		}
	}
	if _, err := ResolveProfile("nope", nil); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("unknown profile: %v", err)
	}
}

// A crashed engine is an exit; a deliberate restart and Close are not.
func TestExitsReportCrashesOnly(t *testing.T) {
	d, err := fast(t).Provision(t.Context(), target.Topology{Replicas: 2, Engine: engine.Config{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if err := d.Restart(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if ex := d.Exits(); len(ex) != 0 {
		t.Fatalf("exits after a deliberate restart: %+v", ex)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, d.Workers[0].URL+"/admin/faults", strings.NewReader(`{"crash": true}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	var ex []target.Exit
	for deadline := time.Now().Add(10 * time.Second); len(ex) == 0 && time.Now().Before(deadline); {
		ex = d.Exits()
		time.Sleep(5 * time.Millisecond) // polling the crash, not synchronising on it
	}
	if len(ex) != 1 || ex[0].Worker.URL != d.Workers[0].URL || ex[0].Reason != "crashed" {
		t.Fatalf("exits %+v, want worker 0 crashed", ex)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ex := d.Exits(); len(ex) != 0 {
		t.Fatalf("exits after Close: %+v", ex)
	}
}
