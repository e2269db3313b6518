package adapter

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoinfer/autoinfer/ledger"
)

// The spool gives back exactly what went in, in order: floats to the bit,
// an empty ITL list as empty and an absent one as absent (the ledger
// writes them as "[]" and "null").
func TestSpoolRoundTrips(t *testing.T) {
	s, err := newSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.close(); err != nil {
			t.Error(err)
		}
	}()
	in := []ledger.Request{
		{Index: 2, SessionID: "s", TTFTMs: math.Nextafter(12.5, 13), ITLs: ledger.Floats{0.1, 1e-300, math.MaxFloat64},
			Status: ledger.RequestOK, Receipt: ledger.JSON(`{"worker":"w1"}`), CachedTokens: 7},
		{Index: 0, ITLs: ledger.Floats{}, Status: "http_503", ErrorType: "http_error", Error: "shed"},
		{Index: 1, Status: "failed", ErrorType: "not_sent", TTFTMs: math.Copysign(0, -1)},
	}
	for _, r := range in {
		s.add(r)
	}
	var out []ledger.Request
	for r, err := range s.records() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("spool round trip (-in +out):\n%s", diff)
	}
}
