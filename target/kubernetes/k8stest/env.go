package k8stest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parallelTests is how many tests Main lets run at once.
const parallelTests = 16

// Env is one test package's control plane and kubelet, started by Main
// and shared by the package's tests.
type Env struct {
	cluster *Cluster
	kubelet *Kubelet
	err     error // why there is no cluster

	mu    sync.Mutex
	nodes int // nodes AddNode started, for distinct pod IPs
}

// Main starts the control plane and a kubelet (options from kubelet,
// which gets a scratch directory), runs the tests, and stops everything.
// When the binaries are absent the tests still run and Env.Cluster skips
// them with the reason.
//
// Tests on the cluster spend most of their time waiting for controllers
// (the namespace controller alone waits 5 s before it empties a deleted
// namespace), not on the CPU, so unless -test.parallel is given Main lets
// up to parallelTests of them run at once instead of GOMAXPROCS.
func (e *Env) Main(m *testing.M, kubelet func(dir string) (KubeletOptions, error)) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			fmt.Fprintln(os.Stderr, "k8stest:", err)
			return 1
		}
	}
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
	if _, err := findBinaries(); err != nil {
		return err
	}
	pods := filepath.Join(dir, "pods")
	if err := os.MkdirAll(pods, 0o755); err != nil {
		return err
	}
	// The kubelet's options (a package builds its binaries there) are
	// made while the control plane starts: both take seconds.
	type configured struct {
		opts KubeletOptions
		err  error
	}
	optsc := make(chan configured, 1)
	go func() {
		opts, err := kubelet(pods)
		optsc <- configured{opts, err}
	}()
	c, err := Start(ctx, filepath.Join(dir, "cluster"))
	conf := <-optsc
	if err != nil {
		return err
	}
	e.cluster = c
	if conf.err != nil {
		return fmt.Errorf("configuring the kubelet: %w", conf.err)
	}
	opts := conf.opts
	opts.Dir = pods
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

// AddNode starts a further kubelet for one test, registering the node
// opts describe (Dir defaults to a test directory), and stops it and
// deletes its Node when the test ends. A test that disturbs a node (its
// heartbeats, say) does so on its own node, which carries a taint that
// keeps the other tests' pods off it, so tests can run in parallel.
func (e *Env) AddNode(t testing.TB, opts KubeletOptions) *Kubelet {
	t.Helper()
	c := e.Cluster(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	e.mu.Lock()
	e.nodes++
	ipA := 100 + (e.kubelet.ipA-100+e.nodes)%ipOctets
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := startKubelet(ctx, c.Client, opts, ipA)
	if err != nil {
		t.Fatalf("k8stest: starting node %s: %v", opts.Node, err)
	}
	t.Cleanup(func() {
		k.Stop()
		if err := c.Client.CoreV1().Nodes().Delete(context.Background(), opts.Node, metav1.DeleteOptions{}); err != nil {
			t.Errorf("k8stest: deleting node %s: %v", opts.Node, err)
		}
	})
	return k
}
