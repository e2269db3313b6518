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
	if err := SetHTTPOverhead(ts, 1.5, "--http-overhead-ms"); err != nil {
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
	err := SetHTTPOverhead([]Trial{mustParse(t, minimal)[0]}, -1, "--http-overhead-ms")
	if err == nil || !strings.Contains(err.Error(), "--http-overhead-ms") {
		t.Errorf("--http-overhead-ms -1: %v, want an error naming the flag", err)
	}
}
