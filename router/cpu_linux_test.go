//go:build linux

package router

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// handlerCPU is the CPU one request with body costs the router's handler
// goroutine, which is locked to its thread so the thread's CPU time is the
// goroutine's: reading, validating and parsing the body, choosing a worker
// and relaying the answer, but not the worker's work on other goroutines.
func handlerCPU(t *testing.T, h http.Handler, body []byte, n int, want int) time.Duration {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	for range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions", bytes.NewReader(body)))
		if rec.Code != want {
			t.Fatalf("status %d %s, want %d", rec.Code, rec.Body.String()[:min(rec.Body.Len(), 200)], want)
		}
	}
	return (threadCPU() - start) / time.Duration(n)
}

// fill repeats unit inside a prompt array until the body is about size bytes.
func fill(unit string, size int) []byte {
	const head, tail = `{"model":"m","prompt":[`, `]}`
	n := (size - len(head) - len(tail)) / (len(unit) + 1)
	return []byte(head + strings.TrimSuffix(strings.Repeat(unit+",", n), ",") + tail)
}

// Acceptance 2: text extraction re-parsed every nesting level, so 160 KB of
// nested arrays cost 10 s of CPU. The router's CPU for a 1 MiB body of
// deeply nested arrays is now within a small factor of a flat 1 MiB
// prompt's, measured in the same run.
func TestAcceptanceNestedBodyCPUIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("measures CPU over a few MiB of requests")
	}
	const size, maxRatio = 1 << 20, 5.0
	e := loopback(t)
	f := e.worker()
	// cache_aware, because it is the policy that extracts the prompt text
	// (the others never walk the prompt at all).
	cfg := testConfig("cache_aware", f.URL)
	r, _ := e.router(cfg)
	h := r.Handler()

	flat := []byte(`{"model":"m","prompt":"` + strings.Repeat("a", size-len(`{"model":"m","prompt":""}`)) + `"}`)
	// The attack: arrays 4000 deep (encoding/json accepts up to 10000),
	// refused at prompt.MaxDepth after one linear scan.
	deep := fill(strings.Repeat("[", 4000)+strings.Repeat("]", 4000), size)
	// Within the depth limit: 30 levels around each short string, all walked.
	nested := fill(strings.Repeat("[", 30)+`"ab"`+strings.Repeat("]", 30), size)

	best := map[string]time.Duration{}
	for range 3 { // interleaved rounds; the least of each is its cost
		for _, c := range []struct {
			name   string
			body   []byte
			status int
		}{{"flat", flat, 200}, {"deep", deep, 400}, {"nested", nested, 200}} {
			d := handlerCPU(t, h, c.body, 2, c.status)
			if old, ok := best[c.name]; !ok || d < old {
				best[c.name] = d
			}
		}
	}
	for _, name := range []string{"deep", "nested"} {
		ratio := float64(best[name]) / float64(best["flat"])
		t.Logf("%s 1 MiB body: %v CPU per request, flat 1 MiB prompt %v: ratio %.2f", name, best[name], best["flat"], ratio)
		if ratio > maxRatio {
			t.Errorf("%s body costs %.1f× a flat prompt's CPU, want ≤ %.0f×", name, ratio, maxRatio)
		}
	}
}
