package trials

import (
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/failure"
)

func TestChecksDefaultAndParse(t *testing.T) {
	s := mustParse(t, minimal)[0]
	if s.Checks.MaxScheduleDelayP99Ms != failure.DefaultScheduleDelayLimitMs || s.Checks.MaxEngineLagRatio != failure.DefaultEngineLagRatioLimit {
		t.Errorf("default checks %+v", s.Checks)
	}
	s = mustParse(t, minimal+"checks: {max_schedule_delay_p99_ms: 250, max_engine_lag_ratio: 1.5}\n")[0]
	if s.Checks != (Checks{MaxScheduleDelayP99Ms: 250, MaxEngineLagRatio: 1.5}) {
		t.Errorf("checks %+v", s.Checks)
	}
}

// Every bad bound is reported at once, each naming its key.
func TestChecksValidation(t *testing.T) {
	_, err := Parse([]byte(minimal+"checks: {max_schedule_delay_p99_ms: 0, max_engine_lag_ratio: .inf}\n"), targetkinds.All())
	if err == nil {
		t.Fatal("bad checks accepted")
	}
	for _, want := range []string{"checks.max_schedule_delay_p99_ms: must be > 0", "checks.max_engine_lag_ratio: must be a finite number > 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := Parse([]byte(minimal+"checks: {max_engine_lag: 1}\n"), targetkinds.All()); err == nil || !strings.Contains(err.Error(), "max_engine_lag") {
		t.Errorf("unknown key: %v", err)
	}
}
