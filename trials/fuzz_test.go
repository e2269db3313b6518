package trials

import (
	"github.com/autoinfer/autoinfer/ledger/metric"

	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
)

// A spec of any bytes parses and validates to trials or a *SpecError,
// never a panic or an unbounded expansion; valid trials have hashes.
func FuzzSpec(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(laughs(3)))
	f.Add([]byte("a: &a [1, *a]\n"))
	f.Add([]byte(minimal + "matrix:\n  router.policy: [round_robin, cache_aware]\n"))
	f.Add([]byte("name: x\ntarget: {kind: static, workers: ['http://u:p@h:1']}\n"))
	f.Add([]byte("name: [\n"))
	kinds := targetkinds.All()
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := Parse(data, kinds)
		if err != nil {
			if _, ok := err.(*SpecError); !ok {
				t.Fatalf("error %T %v, want *SpecError", err, err)
			}
			return
		}
		for _, tr := range ts {
			if tr.SpecHash == "" {
				t.Fatalf("trial %s without a hash", tr.Name)
			}
		}
	})
}

// Any --assert expression parses or fails with an error; a parsed one
// names a known metric.
func FuzzAssertion(f *testing.F) {
	for _, s := range []string{"p99_ttft_ms < 500", "output_throughput >= 1e3", "x", "p99_ttft_ms <", "  p50_tpot_ms<=0.5  ", "error_rate == 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAssertion(s)
		if _, merr := metric.Measured(a.Metric); err == nil && merr != nil {
			t.Fatalf("ParseAssertion(%q) = %+v: unknown metric", s, a)
		}
	})
}
