package trials

import (
	"strings"
	"testing"
)

// TestHTTPOverheadInTheVirtualHashOnly: http_overhead_ms changes a virtual
// trial's spec hash and leaves a real one's as if it were absent (the real
// clock does not use it), so --clock real on a spec written for the
// virtual clock is the same trial as the plain spec.
func TestHTTPOverheadInTheVirtualHashOnly(t *testing.T) {
	plain := mustParse(t, minimal)[0]
	realT := mustParse(t, minimal+"http_overhead_ms: 1.5\n")[0]
	if realT.SpecHash != plain.SpecHash {
		t.Errorf("real clock: http_overhead_ms changed the spec hash")
	}
	virt := mustParse(t, minimal+"clock: virtual\n")[0]
	virtO := mustParse(t, minimal+"clock: virtual\nhttp_overhead_ms: 1.5\n")[0]
	if virtO.SpecHash == virt.SpecHash || virtO.HTTPOverheadMs != 1.5 {
		t.Errorf("virtual clock: http_overhead_ms 1.5 kept the hash (%v) or was not read (%v)", virtO.SpecHash == virt.SpecHash, virtO.HTTPOverheadMs)
	}
	ts := []Trial{virt}
	if err := SetHTTPPath(ts, ptr(1.5), nil); err != nil {
		t.Fatal(err)
	}
	if ts[0].SpecHash != virtO.SpecHash {
		t.Errorf("--http-overhead-ms 1.5 gave hash %s, the spec key %s", ts[0].SpecHash, virtO.SpecHash)
	}
}

func TestHTTPOverheadBounds(t *testing.T) {
	for _, bad := range []string{"http_overhead_ms: -0.5\n", "http_overhead_ms: 1001\n", "http_overhead_ms: .nan\n"} {
		fields := specErr(t, minimal+bad)
		if len(fields) != 1 || fields[0].Path != "http_overhead_ms" || fields[0].Line != 12 {
			t.Errorf("%q: errors %v, want one on http_overhead_ms at line 12", bad, fields)
		}
	}
	err := SetHTTPPath([]Trial{mustParse(t, minimal)[0]}, ptr(-1), nil)
	if err == nil || !strings.Contains(err.Error(), "--http-overhead-ms") {
		t.Errorf("--http-overhead-ms -1: %v, want an error naming the flag", err)
	}
}

// TestHTTPInboundInTheVirtualHashOnly: http_inbound_ms, like
// http_overhead_ms, changes a virtual trial's hash only; the flag gives the
// spec key's hash.
func TestHTTPInboundInTheVirtualHashOnly(t *testing.T) {
	plain := mustParse(t, minimal)[0]
	realT := mustParse(t, minimal+"http_overhead_ms: 1.5\nhttp_inbound_ms: 0.5\n")[0]
	if realT.SpecHash != plain.SpecHash {
		t.Errorf("real clock: http_inbound_ms changed the spec hash")
	}
	virtO := mustParse(t, minimal+"clock: virtual\nhttp_overhead_ms: 1.5\n")[0]
	virtI := mustParse(t, minimal+"clock: virtual\nhttp_overhead_ms: 1.5\nhttp_inbound_ms: 0.5\n")[0]
	if virtI.SpecHash == virtO.SpecHash || virtI.HTTPInboundMs != 0.5 {
		t.Errorf("virtual clock: http_inbound_ms 0.5 kept the hash (%v) or was not read (%v)", virtI.SpecHash == virtO.SpecHash, virtI.HTTPInboundMs)
	}
	ts := []Trial{virtO}
	if err := SetHTTPPath(ts, nil, ptr(0.5)); err != nil {
		t.Fatal(err)
	}
	if ts[0].SpecHash != virtI.SpecHash {
		t.Errorf("--http-inbound-ms 0.5 gave hash %s, the spec key %s", ts[0].SpecHash, virtI.SpecHash)
	}
}

// TestHTTPInboundBounds: http_inbound_ms is a part of http_overhead_ms, so
// it is refused below 0 and above the total, in the spec (naming the key
// and its line) and from either flag (naming the flag).
func TestHTTPInboundBounds(t *testing.T) {
	for _, bad := range []string{"http_inbound_ms: -0.5\n", "http_inbound_ms: 1001\n", "http_inbound_ms: .nan\n", "http_inbound_ms: 0.5\n"} {
		fields := specErr(t, minimal+bad)
		if len(fields) != 1 || fields[0].Path != "http_inbound_ms" || fields[0].Line != 12 {
			t.Errorf("%q: errors %v, want one on http_inbound_ms at line 12", bad, fields)
		}
	}
	fields := specErr(t, minimal+"http_overhead_ms: 1\nhttp_inbound_ms: 1.2\n")
	if len(fields) != 1 || fields[0].Path != "http_inbound_ms" || !strings.Contains(fields[0].Msg, "at most http_overhead_ms (1)") {
		t.Errorf("inbound above the total: errors %v, want one on http_inbound_ms naming the total", fields)
	}
	mustParse(t, minimal+"http_overhead_ms: 1\nhttp_inbound_ms: 1\n") // all of it before the engine is allowed
	ts := []Trial{mustParse(t, minimal+"http_overhead_ms: 1\n")[0]}
	if err := SetHTTPPath(ts, nil, ptr(1.2)); err == nil || !strings.Contains(err.Error(), "--http-inbound-ms") {
		t.Errorf("--http-inbound-ms 1.2 over a total of 1: %v, want an error naming the flag", err)
	}
	if err := SetHTTPPath(ts, nil, ptr(-1)); err == nil || !strings.Contains(err.Error(), "--http-inbound-ms") {
		t.Errorf("--http-inbound-ms -1: %v, want an error naming the flag", err)
	}
	ts = []Trial{mustParse(t, minimal+"http_overhead_ms: 1\nhttp_inbound_ms: 0.8\n")[0]}
	if err := SetHTTPPath(ts, ptr(0.5), nil); err == nil || !strings.Contains(err.Error(), "--http-overhead-ms") ||
		!strings.Contains(err.Error(), "http_inbound_ms (0.8)") {
		t.Errorf("--http-overhead-ms 0.5 under an inbound of 0.8: %v, want an error naming the flag and the inbound", err)
	}
	if ts[0].HTTPOverheadMs != 1 || ts[0].HTTPInboundMs != 0.8 {
		t.Errorf("a refused flag changed the trial: %+v", ts[0].Spec)
	}
	// Both flags at once are checked against each other, not the spec's.
	if err := SetHTTPPath(ts, ptr(0.5), ptr(0.2)); err != nil || ts[0].HTTPOverheadMs != 0.5 || ts[0].HTTPInboundMs != 0.2 {
		t.Errorf("--http-overhead-ms 0.5 --http-inbound-ms 0.2: %v, %+v", err, ts[0].Spec)
	}
}

func ptr(x float64) *float64 { return &x }
