package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// A row whose requests carry route receipts gets a line in the page's
// "Route receipts" section with its misroute rate and predicted against
// served hit rate; a row without receipts gets none, and a page without
// any has no such section. The bootstrap chart, drawn in milliseconds,
// keeps the latency intervals only, not the misroute_rate one.
func TestRouteReceiptsSection(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	rec := func(name string, receipts bool) int64 {
		tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: start, FinishedAt: start.Add(time.Minute),
			EngineConfig: ledger.JSON(`{"model":"m"}`), Topology: ledger.Topology{Replicas: 2}, RouterConfig: ledger.JSON(`{"policy":"precise_prefix"}`)}
		var reqs []ledger.Request
		for i := range 4 {
			q := ledger.Request{Index: i, TTFTMs: 10, Status: ledger.RequestOK, InputTokens: 100, CachedTokens: 32}
			if receipts {
				// Request 3 went to a, which held less than b.
				worker, held := "a", 32
				if i == 3 {
					held = 0
				}
				q.Receipt = ledger.JSON(fmt.Sprintf(`{"policy":"precise_prefix","worker":%q,"candidates":[`+
					`{"id":"a","in_flight":0,"predicted_tokens":32,"held_tokens":%d},{"id":"b","in_flight":0,"predicted_tokens":0,"held_tokens":16}]}`, worker, held))
			}
			reqs = append(reqs, q)
		}
		got, err := l.Record(ctx, tr, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return got.ID
	}
	with, without, again := rec("with", true), rec("without", false), rec("again", true)
	render := func(ids ...int64) (Report, string) {
		r, err := Build(ctx, l, Selection{IDs: ids}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Render(&buf, r); err != nil {
			t.Fatal(err)
		}
		return r, buf.String()
	}
	r, page := render(with, without)
	if len(r.Routes) != 1 || r.Routes[0].ID != with || r.Routes[0].Misrouted != 1 || r.Routes[0].Basis != ledger.BasisHeld {
		t.Fatalf("routes %+v: want row %d alone, 1 misrouted by held tokens", r.Routes, with)
	}
	both, _ := render(with, again)
	if len(both.Pairs) != 1 || len(both.Pairs[0].Intervals) == 0 {
		t.Fatalf("pairs %+v: want one with latency intervals", both.Pairs)
	}
	for _, iv := range both.Pairs[0].Intervals {
		if !strings.HasSuffix(iv.Metric, "_ms") {
			t.Errorf("the bootstrap chart got interval %s", iv.Metric)
		}
	}
	for _, want := range []string{`id="routes-table"`, "<td>with</td>", "25.0 %", "<td>held</td>", "32.0 %", "100.0 %"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if _, page := render(without); strings.Contains(page, `id="routes"`) {
		t.Error("a page without receipts has a route receipts section")
	}
}
