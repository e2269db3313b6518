package failure

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// KindWarmupCircuitsOpen names WarmupCircuitsOpen.
const KindWarmupCircuitsOpen Kind = "WarmupCircuitsOpen"

// WarmupCircuitsOpen means the warm-up left router circuits open: the
// measured window would have started on a pool the warm-up had already
// broken (e.g. 35 of 50 warm-ups answered 500 and every circuit opened), so
// its figures would not describe the deployment.
type WarmupCircuitsOpen struct {
	OpenCircuits int `json:"open_circuits"`
	PoolSize     int `json:"pool_size"`
	Sent         int `json:"warmup_sent"`
	Failed       int `json:"warmup_failed"`
	// ErrorTypes counts the failed warm-up requests by error type.
	ErrorTypes map[string]int `json:"error_types,omitempty"`
}

// Kind implements Failure.
func (WarmupCircuitsOpen) Kind() Kind { return KindWarmupCircuitsOpen }

func (f WarmupCircuitsOpen) Error() string {
	var types []string
	for _, t := range slices.Sorted(maps.Keys(f.ErrorTypes)) {
		types = append(types, fmt.Sprintf("%s ×%d", t, f.ErrorTypes[t]))
	}
	detail := ""
	if len(types) > 0 {
		detail = " (" + strings.Join(types, ", ") + ")"
	}
	return fmt.Sprintf("warm-up left %d of %d router circuits open: %d of %d warm-up requests failed%s",
		f.OpenCircuits, f.PoolSize, f.Failed, f.Sent, detail)
}

// WarmupOutcome is what the warm-up did, as the trial runner saw it right
// before the measured window.
type WarmupOutcome struct {
	Sent       int
	Failed     int
	ErrorTypes map[string]int
	// OpenCircuits is the router's count of open circuits after the
	// warm-up (vllm_router_cb_state == 1); 0 without a router.
	OpenCircuits int
	PoolSize     int
}

// warmupRule: circuits the warm-up left open explain whatever the measured
// window then saw, so it comes before the request-level rules.
func warmupRule(o *Observation) Failure {
	w := o.Warmup
	if w == nil || w.OpenCircuits == 0 {
		return nil
	}
	return WarmupCircuitsOpen{OpenCircuits: w.OpenCircuits, PoolSize: w.PoolSize, Sent: w.Sent, Failed: w.Failed,
		ErrorTypes: w.ErrorTypes}
}
