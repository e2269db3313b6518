package clitest

import (
	"os/exec"
	"strings"
	"testing"
)

// The built binary is in the test's own mode: `go version -m` lists the
// build settings, and -race is among them exactly when this test runs
// under the race detector.
func TestBuildMatchesTheTestsRaceMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the autoinfer binary")
	}
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	if got := strings.Contains(string(out), "-race=true"); got != raceDetector {
		t.Fatalf("binary built with -race=%v, want %v:\n%s", got, raceDetector, out)
	}
}
