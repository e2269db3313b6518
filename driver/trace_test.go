package driver_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// TestTraceTimestampsDriveTheSchedule: a trace's timestamps (ms, scaled by
// time_scale) become the intended offsets, overriding the arrival process,
// and session_id groups session headers.
func TestTraceTimestampsDriveTheSchedule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	data := `{"timestamp": 5000, "input_length": 20, "output_length": 3, "session_id": "u1"}
{"timestamp": 5100, "input_length": 30, "output_length": 3}
{"timestamp": 5900, "prompt": "hello there.", "output_length": 2, "session_id": "u1"}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := driver.Config{BaseURL: "http://127.0.0.1:1", Model: "m", TrialID: "tr", Arrival: driver.Arrival{RequestRate: 1},
		Workload: driver.Workload{Kind: "trace", Path: path, TimeScale: 2}}
	st, err := driver.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 50 * time.Millisecond, 450 * time.Millisecond}
	sessions := []string{"autoinfer-tr-0", "autoinfer-tr-1", "autoinfer-tr-0"}
	for i, r := range st.Requests {
		if r.Offset != want[i] || r.Session != sessions[i] {
			t.Errorf("request %d: offset %v session %s, want %v %s", i, r.Offset, r.Session, want[i], sessions[i])
		}
	}
	if st.Requests[2].InputTokens != 3 || st.Requests[1].MaxTokens != 3 {
		t.Errorf("lengths: %+v", st.Requests)
	}
}
