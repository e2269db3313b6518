package k8stest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Version is the Kubernetes release the harness builds and runs; client-go
// in go.mod is its v0 twin.
const Version = "v1.37.2"

// binaries are the control plane's executables, as build.sh names them.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// BinDir is where build.sh puts the binaries: $AUTOINFER_K8S_BIN when set,
// else <user cache dir>/autoinfer/k8s/<Version> (the Makefile's path).
func BinDir() (string, error) {
	if d := os.Getenv("AUTOINFER_K8S_BIN"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the control plane binaries: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "autoinfer", "k8s", Version), nil
}

// ErrNoBinaries says the control plane is not built; tests skip on it.
var ErrNoBinaries = errors.New("the Kubernetes control plane binaries are not built (run `make k8s-binaries`)")

// findBinaries returns the directory holding every binary, or an error
// wrapping ErrNoBinaries that names the first missing one.
func findBinaries() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	for _, b := range binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			return "", fmt.Errorf("%w: %s missing", ErrNoBinaries, filepath.Join(dir, b))
		}
	}
	return dir, nil
}
