package trials

import (
	"strings"
	"testing"
)

// TestVirtualClockWantsAModel: a static or process target runs on the
// virtual clock (its trials' replays do) only when it names a profile of
// its servers; without one the clock is refused, naming the kind.
func TestVirtualClockWantsAModel(t *testing.T) {
	const (
		static  = "target: {kind: static, hardware: h, workers: ['http://a:1', 'http://b:1']%s}\n"
		process = "target: {kind: process, hardware: h, command: 'x --port {port}'%s}\n"
	)
	for _, c := range []struct {
		target, profile, wantErr string
	}{
		{static, ", profile: fast", ""},
		{static, "", "clock: virtual needs simulated workers or a profile of the servers (target.kind static runs real servers and names no profile)"},
		{process, ", profile: fast", ""},
		{process, "", "(target.kind process runs real servers and names no profile)"},
	} {
		ts := mustParse(t, minimal+strings.Replace(c.target, "%s", c.profile, 1))
		err := SetClock(ts, ClockVirtual, "--clock")
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("profile %q: %v", c.profile, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("profile %q: error %v, want %q", c.profile, err, c.wantErr)
		}
	}
}
