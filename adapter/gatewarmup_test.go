package adapter

import (
	"fmt"
	"strings"
	"testing"
)

// The gate gives its verdict whether it runs alongside the warm-up (the
// spec has warm-up requests) or after the measured run (it has none).
func TestGateWithAndWithoutWarmup(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	for _, warmup := range []string{"warmup: {requests: 8}", "warmup: {requests: 0}"} {
		spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "warmup: {requests: 8}", warmup, 1)
		out := runOK(t, r, parseSpec(t, spec)[0])
		if out.Gate == nil || !out.Gate.Passed || out.Gate.Prompts != 2 {
			t.Errorf("%s: gate %+v, want a passed gate over 2 prompts", warmup, out.Gate)
		}
		if out.Summary.Completed != 24 {
			t.Errorf("%s: %d measured requests completed, want 24", warmup, out.Summary.Completed)
		}
	}
}
