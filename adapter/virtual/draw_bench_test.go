package virtual_test

import (
	"testing"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// BenchmarkMooncakeDraw is the driver's share of BenchmarkMooncakeScale's
// prompts: every request of the Mooncake-scale trace drawn as the token
// path draws it (text parts and id spans, a fresh block cache each run),
// nothing simulated. ns/op and B/op are one trace's drawing.
//
//	go test -run '^$' -bench MooncakeDraw -benchtime 1x -benchmem ./adapter/virtual
func BenchmarkMooncakeDraw(b *testing.B) {
	path, _ := writeMooncakeTrace(b, b.TempDir(), mooncakeRequests, mooncakeSpan)
	tokens := 0
	for b.Loop() {
		items, err := workload.BuildItems(workload.Workload{Kind: workload.Trace, Path: path, BlockSize: mooncakeBlock}, 0,
			workload.PhaseSource(workload.PhaseMeasured, 1, "draw"), workload.Sim{})
		if err != nil {
			b.Fatal(err)
		}
		ti := items.(workload.TokenItems)
		for i := range items.Len() {
			it, _, _ := ti.AtParts(i, false)
			tokens += it.InputTokens
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
}
