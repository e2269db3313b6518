package report

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
)

// Rows record their spec's SLO: without --goodput the report uses the one
// every ok row recorded, and says why there is none when the rows recorded
// none or different ones; --goodput wins over the rows'.
func TestBuildUsesTheRowsSLO(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	rec := func(name, slo string) {
		tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: start, FinishedAt: start.Add(time.Minute),
			EngineConfig: ledger.JSON(`{"model":"m"}`), Topology: ledger.Topology{Replicas: 1},
			RouterConfig: ledger.JSON(`{"policy":"round_robin"}`), Workload: ledger.JSON(`{"kind":"random"}`),
			Identity: ledger.Identity{TargetKind: "sim", Hardware: "fast", Model: "m", WorkloadHash: "w"}}
		if slo != "" {
			tr.SLO = ledger.JSON(slo)
		}
		tr.Duration, tr.Completed = 1, 1
		if _, err := l.Record(ctx, tr, []ledger.Request{{TTFTMs: 50, TPOTMs: 5, E2ELMs: 60, OutputTokens: 2, Status: ledger.RequestOK}}); err != nil {
			t.Fatal(err)
		}
	}
	curves := func(opt Options) Curves {
		t.Helper()
		r, err := Build(ctx, l, Selection{}, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r.Curves
	}

	rec("bare", "")
	if c := curves(Options{}); c.SLO != nil || !strings.Contains(c.NoSLO, "set no SLO") {
		t.Errorf("rows without an SLO: SLO %+v, reason %q", c.SLO, c.NoSLO)
	}
	rec("a", `{"ttft_ms":100}`)
	if c := curves(Options{}); c.SLO != nil || !strings.Contains(c.NoSLO, "different SLOs") {
		t.Errorf("a row without and a row with an SLO: SLO %+v, reason %q", c.SLO, c.NoSLO)
	}
	r, err := Build(ctx, l, Selection{IDs: []int64{2}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Curves; c.SLO == nil || c.SLO.TTFTMs != 100 || c.SLO.Source != "the rows' spec" || c.NoSLO != "" {
		t.Errorf("one row's recorded SLO: SLO %+v, reason %q", c.SLO, c.NoSLO)
	}
	if c := curves(Options{SLO: metrics.SLO{TPOTMs: 20}, SLOSource: "--goodput"}); c.SLO == nil || c.SLO.TPOTMs != 20 || c.NoSLO != "" {
		t.Errorf("--goodput: SLO %+v, reason %q", c.SLO, c.NoSLO)
	}
}
