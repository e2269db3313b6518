package failure

import (
	"fmt"
	"strings"
	"testing"
)

// A worker's log tail keeps the last lines within both bounds, drops a
// line cut by the byte bound and trailing blank lines.
func TestLogTailBounds(t *testing.T) {
	var many []string
	for i := range 50 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	long := strings.Repeat("x", LogTailMaxBytes)
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short, trailing newlines dropped", "a\nb\n\n", "a\nb"},
		{"last lines kept", strings.Join(many, "\n") + "\n", strings.Join(many[50-LogTailMaxLines:], "\n")},
		{"byte bound drops the cut line", "first\n" + long + "\nlast", "last"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := LogTail(tc.in)
			if got != tc.want {
				t.Errorf("LogTail = %q, want %q", got, tc.want)
			}
			if len(got) > LogTailMaxBytes || strings.Count(got, "\n") >= LogTailMaxLines {
				t.Errorf("LogTail = %d bytes, %d lines: past the bounds", len(got), strings.Count(got, "\n")+1)
			}
		})
	}
}

// A worker failure's message carries its log tail on one line; the JSON
// the ledger stores keeps it whole.
func TestWorkerFailuresCarryTheirLogTail(t *testing.T) {
	tail := "INFO starting\nautoinfer: unknown flag: --bogus-flag"
	for _, f := range []Failure{
		WorkerStartupFailed{Worker: "collocated[0] pod ns/p", Detail: "pod ns/p: container CrashLoopBackOff, exit code 2", ExitCode: 2, LogTail: tail},
		WorkerCrashed{Worker: "collocated[0] http://127.0.0.1:9", ExitCode: 1, LogTail: tail},
		WorkerCrashed{Worker: "collocated[0] http://127.0.0.1:9", ExitCode: -1, Signal: "killed", LogTail: tail},
	} {
		msg := f.Error()
		if !strings.HasSuffix(msg, "; last log lines: INFO starting | autoinfer: unknown flag: --bogus-flag") || strings.Contains(msg, "\n") {
			t.Errorf("%s message %q: want the tail on one line at its end", f.Kind(), msg)
		}
		kind, raw, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(kind, raw)
		if err != nil || back != f {
			t.Errorf("%s round trip: %#v, %v; want %#v", kind, back, err, f)
		}
	}
	if msg := (WorkerCrashed{Worker: "w", ExitCode: 3}).Error(); msg != "worker w crashed: exit status 3" {
		t.Errorf("without a tail: %q", msg)
	}
}
