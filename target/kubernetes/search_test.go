package kubernetes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/pgtest"
)

// searchSpec is a 200-candidate space (2 policies × 100 max_num_seqs) on
// small traffic, spread over the cluster by search.kubernetes (%[1]s the
// kubeconfig, %[2]d the seed, %[3]d the requests per candidate).
const searchSpec = `
seed: %[2]d
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 2, engine: {model: sim-llama-3-8b}}
router: {policy: round_robin}
workload: {kind: random, input_len: 64, output_len: 8, num_prompts: %[3]d, arrival: {kind: poisson, request_rate: 40}}
warmup: {requests: 2}
search:
  space:
    router.policy: [round_robin, power_of_two]
    topology.engine.max_num_seqs: {from: 4, to: 400, step: 4}
  objective:
    pareto: [p99_ttft_ms, output_throughput]
  kubernetes:
    kubeconfig: %[1]s
    image: ` + testImage + `
    command: [autoinfer]
    pods: 4
`

// searchLedger starts a PostgreSQL server for one test and returns the
// URL of a database on it: the pods record their rows there.
func searchLedger(t *testing.T) string {
	t.Helper()
	srv, err := pgtest.Start(t.Context())
	if errors.Is(err, pgtest.ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := srv.CreateDatabase(t.Context(), "search"); err != nil {
		t.Fatal(err)
	}
	return srv.URL("search")
}

type searchOut struct {
	SearchID   string `json:"search_id"`
	Candidates int    `json:"candidates"`
	Front      []struct {
		Name   string             `json:"name"`
		Values map[string]float64 `json:"values"`
	} `json:"front"`
}

func runSearch(t *testing.T, args ...string) searchOut {
	t.Helper()
	cmd := exec.Command(autoinferBin, append([]string{"search"}, args...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("autoinfer search %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var res searchOut
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("search output: %v\n%s", err, out)
	}
	return res
}

// Acceptance 4: search --kubernetes over 200 candidates with 4 pods gives
// the front the local search gives, and leaves nothing behind.
func TestSearchOnKubernetesMatchesLocal(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	c := env.Cluster(t)
	url := searchLedger(t)
	spec := filepath.Join(t.TempDir(), "space.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(searchSpec, c.Kubeconfig, 5, 16)), 0o644); err != nil {
		t.Fatal(err)
	}
	local := runSearch(t, spec, "--ledger", filepath.Join(t.TempDir(), "local.db"), "-o", "json")
	remote := runSearch(t, spec, "--kubernetes", "--ledger", url, "-o", "json")
	if local.Candidates != 200 || remote.Candidates != 200 || remote.SearchID != local.SearchID || len(local.Front) == 0 {
		t.Fatalf("local %d candidates (search %s), remote %d (%s); want 200 each, one search", local.Candidates, local.SearchID, remote.Candidates, remote.SearchID)
	}
	if len(remote.Front) != len(local.Front) {
		t.Fatalf("front of %d remotely, %d locally", len(remote.Front), len(local.Front))
	}
	for i, l := range local.Front {
		r := remote.Front[i]
		if r.Name != l.Name || fmt.Sprint(r.Values) != fmt.Sprint(l.Values) {
			t.Errorf("front #%d: remotely %s %v, locally %s %v", i+1, r.Name, r.Values, l.Name, l.Values)
		}
	}
	ns := "search-" + local.SearchID
	pods := 0
	for _, p := range kubelet.Started() {
		if p.Namespace == ns {
			pods++
		}
	}
	if pods != 4 {
		t.Errorf("%d pods ran in %s, want 4 (one Indexed Job)", pods, ns)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the search: %v, want it gone", ns, err)
	}
	l, err := ledger.OpenReadOnly(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(t.Context(), ledger.Filter{IncludeVirtual: true, IncludeStale: true})
	if err != nil || len(rows) != 200 {
		t.Errorf("the shared ledger holds %d rows (%v), want the 200 candidates'", len(rows), err)
	}
}

// A search --kubernetes killed with SIGKILL leaves its namespace and
// pods; target cleanup --kubernetes removes them. Cleanup removes every
// labelled namespace of the cluster, so this test is not parallel.
func TestSearchOnKubernetesCleanupAfterSIGKILL(t *testing.T) {
	env.Kubelet(t)
	c := env.Cluster(t)
	url := searchLedger(t)
	spec := filepath.Join(t.TempDir(), "space.yaml")
	// Long candidates, so the pods are still running when the search dies.
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(searchSpec, c.Kubeconfig, 6, 20000)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(autoinferBin, "search", spec, "--kubernetes", "--ledger", url)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	running := func() []corev1.Pod {
		pods, err := c.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name"})
		if err != nil {
			t.Fatal(err)
		}
		var mine []corev1.Pod
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Namespace, "search-") && p.Status.Phase == corev1.PodRunning {
				mine = append(mine, p)
			}
		}
		return mine
	}
	for len(running()) < 4 {
		select {
		case err := <-exited:
			t.Fatalf("search ended before its pods ran: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	ns := running()[0].Namespace
	cleanup, err := exec.Command(autoinferBin, "target", "cleanup", "--kubernetes", "--kubeconfig", targetKubeconfig(t, "cluster")).CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup: %v\n%s", err, cleanup)
	}
	if !strings.Contains(string(cleanup), ns) {
		t.Errorf("cleanup said %q, want it to name %s", cleanup, ns)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after cleanup: %v, want it gone", ns, err)
	}
	if left := running(); len(left) > 0 {
		t.Errorf("%d search pods still run after cleanup", len(left))
	}
}
