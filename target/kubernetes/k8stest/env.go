package k8stest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Env is one test package's control plane and kubelet, started by Main
// and shared by the package's tests.
type Env struct {
	cluster *Cluster
	kubelet *Kubelet
	err     error // why there is no cluster
}

// Main starts the control plane and a kubelet (options from kubelet,
// which gets a scratch directory), runs the tests, and stops everything.
// When the binaries are absent the tests still run and Env.Cluster skips
// them with the reason.
func (e *Env) Main(m *testing.M, kubelet func(dir string) (KubeletOptions, error)) int {
	dir, err := os.MkdirTemp("", "autoinfer-k8stest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e.err = e.start(dir, kubelet)
	if e.err != nil && !errors.Is(e.err, ErrNoBinaries) {
		fmt.Fprintln(os.Stderr, "k8stest:", e.err)
		e.stop()
		return 1
	}
	code := m.Run()
	e.stop()
	return code
}

func (e *Env) start(dir string, kubelet func(dir string) (KubeletOptions, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, filepath.Join(dir, "cluster"))
	if err != nil {
		return err
	}
	e.cluster = c
	if err := os.MkdirAll(filepath.Join(dir, "pods"), 0o755); err != nil {
		return err
	}
	opts, err := kubelet(filepath.Join(dir, "pods"))
	if err != nil {
		return fmt.Errorf("configuring the kubelet: %w", err)
	}
	opts.Dir = filepath.Join(dir, "pods")
	if e.kubelet, err = StartKubelet(ctx, c.Client, opts); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "k8stest: control plane %s and node %s ready in %s\n", Version, opts.Node, time.Since(began).Round(time.Millisecond))
	return nil
}

func (e *Env) stop() {
	if e.kubelet != nil {
		e.kubelet.Stop()
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "k8stest: stopping the control plane:", err)
		}
	}
}

// Cluster returns the running control plane, or skips t when the binaries
// are not built.
func (e *Env) Cluster(t testing.TB) *Cluster {
	t.Helper()
	if e.err != nil {
		t.Skipf("k8stest: %v", e.err)
	}
	if e.cluster == nil {
		t.Fatal("k8stest: Env.Main did not run")
	}
	return e.cluster
}

// Kubelet returns the running kubelet, or skips t like Cluster.
func (e *Env) Kubelet(t testing.TB) *Kubelet {
	t.Helper()
	e.Cluster(t)
	return e.kubelet
}
