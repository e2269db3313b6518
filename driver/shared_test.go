package driver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Runs given one Workloads read the same built trace when their workload,
// seed and stream agree (one build, the very same items), build their own
// when not, and send what an unshared run sends, byte for byte.
func TestWorkloadsShareBuiltItems(t *testing.T) {
	cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 4, TrialID: "search",
		Workload: Workload{Kind: "trace", Path: writeSharedTrace(t, 30), BlockSize: 16}}
	ws := NewWorkloads()
	a, srcA, _, err := lazyStream(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	c, _, _, err := lazyStream(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Len() != 1 || a.items != c.items {
		t.Fatalf("%d workloads built for two runs of one workload (same items: %v), want 1", ws.Len(), a.items == c.items)
	}
	other := cfg
	other.Seed = 5
	d, _, _, err := lazyStream(other, ws)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Len() != 2 || d.items == a.items {
		t.Fatalf("%d workloads built after another seed's run, want 2 and items of its own", ws.Len())
	}
	_, alone, _, err := lazyStream(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		i, _, err := srcA.Next()
		if err != nil {
			t.Fatal(err)
		}
		j, _, err := alone.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(srcA.At(i).Body, alone.At(j).Body) {
			t.Fatalf("request %d: the shared workload's body differs from an unshared run's", i)
		}
	}
}

// A run through Workloads takes the stream hash an earlier run of the same
// stream digested (its bodies are not digested again) when only fields
// that never reach a request differ (run id, label, address, HTTP path
// timing), and digests its own when a field the requests carry differs
// (model, session scheme): every hash equals an unshared run's.
func TestWorkloadsShareStreamHash(t *testing.T) {
	cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 4, TrialID: "search", RunID: "a", Label: "a",
		Workload: Workload{Kind: "trace", Path: writeSharedTrace(t, 40), BlockSize: 16}}
	unshared := func(c Config) string {
		_, src, _, err := lazyStream(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := src.Hash()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ws := NewWorkloads()
	run := func(c Config) (string, bool) {
		_, src, _, err := lazyStream(c, ws)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := src.Next(); err != nil { // produces as ever
			t.Fatal(err)
		}
		digested := src.h != nil
		h, err := src.Hash()
		if err != nil {
			t.Fatal(err)
		}
		return h, digested
	}
	if h, digested := run(cfg); h != unshared(cfg) || !digested {
		t.Fatalf("first run: hash %s (digested: %v), want the unshared run's %s, digested", h, digested, unshared(cfg))
	}
	same := cfg
	same.RunID, same.Label, same.BaseURL, same.HTTPOverhead, same.HTTPInbound = "b", "b", "http://127.0.0.1:2", time.Millisecond, time.Millisecond
	if h, digested := run(same); h != unshared(cfg) || digested {
		t.Errorf("a run of the same stream: hash %s (digested: %v), want the recorded %s, not digested", h, digested, unshared(cfg))
	}
	model, scheme := cfg, cfg
	model.Model, scheme.SessionScheme = "m2", "s-{index}"
	for _, c := range []Config{model, scheme} {
		want := unshared(c)
		if h, digested := run(c); h != want || !digested || want == unshared(cfg) {
			t.Errorf("model %q, scheme %q: hash %s (digested: %v), want its own %s, digested", c.Model, c.SessionScheme, h, digested, want)
		}
	}
}

// writeSharedTrace writes a trace of n requests whose hash_ids share
// blocks (three leading ones) and returns its path.
func writeSharedTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 4, "hash_ids": [%d, %d]}`+"\n", i*100, 20+i%9, i%3, 10+i)
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
