package kubernetes_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	k8starget "github.com/autoinfer/autoinfer/target/kubernetes"
)

// Acceptance 5: `autoinfer trial run` killed with SIGKILL mid-trial leaves
// its namespace, Deployments and pods; `autoinfer target cleanup
// --kubernetes` (under the documented ClusterRole) removes every one.
// Cleanup without a namespace removes every trial's objects in the
// cluster, so this test does not run in parallel: the parallel tests
// start once it ended.
func TestCleanupAfterSIGKILL(t *testing.T) {
	env.Kubelet(t)
	c := env.Cluster(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(trialSpec, kubernetesTarget(t), 5000, 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	run, _, exited := startTrialRun(t, spec, filepath.Join(dir, "ledger.db"))
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	pods, err := c.Client.CoreV1().Pods("").List(context.Background(), listManaged())
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("after SIGKILL: %v, %d pods left; want the killed run's pods still there", err, len(pods.Items))
	}

	out, err := exec.Command(autoinferBin, "target", "cleanup", "--kubernetes", "--kubeconfig", targetKubeconfig(t, "cluster")).CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "deleted trial ") {
		t.Errorf("cleanup said %q, want what it deleted", out)
	}
	requireNothingLabelled(t, "", k8starget.ManagedByLabel+"=autoinfer")
	requireNothingLabelled(t, "", k8starget.TrialLabel)

	out, err = exec.Command(autoinferBin, "target", "cleanup", "--kubernetes", "--kubeconfig", targetKubeconfig(t, "cluster")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing to clean up") {
		t.Errorf("second cleanup: %v %q, want nothing to clean up", err, out)
	}
}

// SIGTERM (and Ctrl-C) mid-trial: autoinfer records the aborted trial and
// tears everything down before it exits.
func TestSIGTERMTearsDown(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(trialSpec, kubernetesTarget(t), 5000, 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	run, stderr, exited := startTrialRun(t, spec, filepath.Join(dir, "ledger.db"))
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	if code := run.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit status %d (%v), want 130 (interrupted)\n%s", code, err, stderr.String())
	}
	requireTrialsGone(t, kubelet)
}

// startTrialRun starts `autoinfer trial run spec` and returns once the
// trial is mid-way: both engines' pods (this test's) Ready. exited
// receives Wait's result.
func startTrialRun(t *testing.T, spec, ledgerPath string) (*exec.Cmd, *syncBuffer, <-chan error) {
	t.Helper()
	c := env.Cluster(t)
	stderr := &syncBuffer{}
	run := exec.Command(autoinferBin, "trial", "run", spec, "--ledger", ledgerPath)
	run.Stderr, run.Stdout = stderr, stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	for ready := 0; ready < 2; {
		select {
		case err := <-exited:
			t.Fatalf("trial run ended before its pods were ready: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		pods, err := c.Client.CoreV1().Pods("").List(context.Background(), listManaged())
		if err != nil {
			t.Fatal(err)
		}
		ready = 0
		for _, p := range pods.Items {
			if !ownPod(t, &p) {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
	}
	return run, stderr, exited
}

// syncBuffer is a bytes.Buffer the child's output and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
