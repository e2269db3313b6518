package clitest

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// Build builds github.com/autoinfer/autoinfer into dir/autoinfer and
// returns its path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "autoinfer")
	args := []string{"build", "-o", bin}
	if raceDetector {
		args = append(args, "-race")
	}
	args = append(args, "github.com/autoinfer/autoinfer")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building autoinfer: %w\n%s", err, out)
	}
	return bin, nil
}
