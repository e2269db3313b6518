package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target"
	k8starget "github.com/autoinfer/autoinfer/target/kubernetes"
	"github.com/autoinfer/autoinfer/target/kubernetes/k8stest"
	"github.com/autoinfer/autoinfer/trials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trialSpec is a small two-replica trial; %s is the target section.
const trialSpec = `
name: k8s-tiny
seed: 7
target: %s
topology:
  replicas: 2
  engine: {model: sim-m, max_num_seqs: 32}
router: {policy: round_robin}
workload:
  kind: random
  input_len: 64
  output_len: 8
  num_prompts: %d
  arrival: {kind: poisson, request_rate: %d}
warmup: {requests: 8}
gate: {reference: none}
`

// kubernetesTarget is the target section running `autoinfer sim serve`
// pods with the fast profile under the docs' ClusterRole (fresh namespace),
// tagged with the test's name (caseEnv); extra lines are added to it.
func kubernetesTarget(t *testing.T, extra ...string) string {
	t.Helper()
	return kubernetesTargetAs(t, targetKubeconfig(t, "cluster"), extra...)
}

// kubernetesTargetAs is kubernetesTarget authenticating with kubeconfig.
func kubernetesTargetAs(t *testing.T, kubeconfig string, extra ...string) string {
	t.Helper()
	port, err := target.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
  kind: kubernetes
  kubeconfig: %s
  image: %s
  command: [autoinfer, sim, serve]
  args: [--host, "$(POD_IP)", --port, "{port}", --model, "{model}", --role, "{role}", --profile, fast, "{engine_args}"]
  port: %d
  resources: {limits: {nvidia.com/gpu: "1"}}
  env: {%s: %q}
  startup_timeout: 5m`, kubeconfig, testImage, port, caseEnv, t.Name()) + strings.Join(append([]string{""}, extra...), "\n  ")
}

// caseEnv is the engine containers' variable kubernetesTarget sets to the
// test's name: the tests run in parallel on one kubelet, and each tells
// its own pods (and so its trials) from the others' by it.
const caseEnv = "K8STEST_CASE"

// ownPod reports whether p is an engine pod of this test.
func ownPod(t *testing.T, p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == caseEnv && e.Value == t.Name() {
				return true
			}
		}
	}
	return false
}

// ownTrials returns the ids of this test's trials that ran pods on the
// kubelet, failing when none did.
func ownTrials(t *testing.T, kubelet *k8stest.Kubelet) []string {
	t.Helper()
	var ids []string
	for _, p := range kubelet.Started() {
		if id := p.Labels[k8starget.TrialLabel]; ownPod(t, p) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.Fatal("the kubelet ran no pod of this test")
	}
	return ids
}

// requireTrialsGone fails when anything labelled with one of this test's
// trials remains, namespaces included.
func requireTrialsGone(t *testing.T, kubelet *k8stest.Kubelet) {
	t.Helper()
	for _, id := range ownTrials(t, kubelet) {
		requireNothingLabelled(t, "", k8starget.TrialLabel+"="+id)
	}
}

func parse(t *testing.T, spec string) trials.Trial {
	t.Helper()
	ts, err := trials.Parse([]byte(spec), targetkinds.All())
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return ts[0]
}

// runner records into a fresh ledger. The host-load bounds are off: on a
// loaded test machine they would decide these tests, which are about
// other verdicts.
func runner(t *testing.T, progress func(driver.Progress), asserts ...trials.Assertion) (*adapter.Runner, *ledger.Ledger) {
	t.Helper()
	led, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	r, err := adapter.New(adapter.Options{Ledger: led, WorkDir: t.TempDir(), Progress: progress, Assertions: asserts,
		ScheduleDelayLimit: time.Duration(math.MaxInt64), EngineLagRatioLimit: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	return r, led
}

// Acceptance 2: a kubernetes trial of two collocated simulated engines,
// run from outside the cluster (runner in-cluster: the router, driver and
// gate run in a runner pod, here one the test kubelet runs), writes a row
// to the local ledger whose columns and request records match the sim
// target's for the same spec, with the hardware identity read from the
// node's labels; nothing labelled is left.
func TestTrialMatchesSimTarget(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	ctx := context.Background()
	r, led := runner(t, nil)
	k8s, err := r.Run(ctx, parse(t, fmt.Sprintf(trialSpec, kubernetesTarget(t, "runner: in-cluster", "runner_image: "+testImage), 24, 200)))
	if err != nil {
		t.Fatal(err)
	}
	if k8s.Status != ledger.StatusOK {
		t.Fatalf("kubernetes trial: %s %v", k8s.Status, k8s.Failure)
	}
	requireTrialsGone(t, kubelet)
	trials := ownTrials(t, kubelet)
	var ran []string
	for _, p := range kubelet.Started() {
		if slices.Contains(trials, p.Labels[k8starget.TrialLabel]) {
			ran = append(ran, p.Namespace+"/"+p.Name)
		}
	}
	if len(trials) != 1 || len(ran) != 3 || !strings.HasSuffix(ran[2], "-runner") {
		t.Errorf("trials %v ran pods %v, want one trial: two engines, then the runner", trials, ran)
	}
	sim, err := r.Run(ctx, parse(t, fmt.Sprintf(trialSpec, "{kind: sim, profile: fast}", 24, 200)))
	if err != nil || sim.Status != ledger.StatusOK {
		t.Fatalf("sim trial: %v %s %v", err, sim.Status, sim.Failure)
	}

	a, err := led.Get(ctx, k8s.RowID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := led.Get(ctx, sim.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if a.TargetKind != k8starget.Kind || a.Hardware != "1x"+testGPU || !strings.Contains(string(a.HardwareConfig), testGPU) {
		t.Errorf("row identity: kind %s hardware %s config %s", a.TargetKind, a.Hardware, a.HardwareConfig)
	}
	if diff := columnDiff(t, a, b); len(diff) > 0 {
		t.Errorf("columns set on one row only: %v", diff)
	}
	if k8s.Summary.StreamHash != sim.Summary.StreamHash || k8s.Summary.SentHash != sim.Summary.SentHash {
		t.Errorf("streams differ: kubernetes %s/%s, sim %s/%s", k8s.Summary.StreamHash, k8s.Summary.SentHash, sim.Summary.StreamHash, sim.Summary.SentHash)
	}
	ra, err := led.Requests(ctx, k8s.RowID)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := led.Requests(ctx, sim.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra) != len(rb) || len(ra) != 24 {
		t.Fatalf("%d and %d request records, want 24 each", len(ra), len(rb))
	}
	for i := range ra {
		x, y := ra[i], rb[i]
		if x.Index != y.Index || x.Status != y.Status || x.InputTokens != y.InputTokens || x.OutputTokens != y.OutputTokens {
			t.Errorf("request %d: kubernetes %+v, sim %+v", i, x, y)
		}
	}
}

// columnDiff lists the row's columns that are empty on one row and set on
// the other, besides those that name the run (ids, times, hashes of what
// differs by construction: the target section and the hardware) and
// predicted_by: a sim-target row links the virtual replay it was judged by,
// a kubernetes row has none.
func columnDiff(t *testing.T, a, b ledger.Trial) []string {
	t.Helper()
	ma, mb := columns(t, a), columns(t, b)
	var diff []string
	for k, set := range ma {
		if set != mb[k] && k != "predicted_by" {
			diff = append(diff, k)
		}
	}
	slices.Sort(diff)
	return diff
}

// columns says which of the row's columns are set. A nullable column (a
// pointer field) is set when it is not NULL, even at 0: kv_usage_mean of
// this tiny trial is a measured 0 unless a 200 ms KV sample happens to
// land during its fraction of a second of traffic, which a slower run (the
// in-cluster runner, a loaded host) makes likely on one row and not the
// other. Other columns are set when not zero.
func columns(t *testing.T, row ledger.Trial) map[string]bool {
	t.Helper()
	nullable := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case f.Anonymous && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case f.Type.Kind() == reflect.Pointer && name != "" && name != "-":
				nullable[name] = true
			}
		}
	}
	walk(reflect.TypeFor[ledger.Trial]())
	if !nullable["kv_usage_mean"] {
		t.Fatal("ledger.Trial's kv_usage_mean is no longer a nullable column: revisit columns")
	}
	raw, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			out[k] = false
		case string:
			out[k] = x != ""
		case float64:
			out[k] = x != 0 || nullable[k]
		case bool:
			out[k] = x
		default:
			out[k] = true
		}
	}
	return out
}

// Acceptance 4, the fourth case: a container killed in the measured window
// is a WorkerCrashed naming its pod.
func TestCrashInMeasuredWindow(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	c := env.Cluster(t)
	var once sync.Once
	var killErr error
	var killed string
	progress := func(p driver.Progress) {
		if p.Phase != "measured" || p.Done < 10 {
			return
		}
		once.Do(func() {
			pods, err := c.Client.CoreV1().Pods("").List(context.Background(), listManaged())
			if err != nil {
				killErr = fmt.Errorf("finding a pod to kill: %w", err)
				return
			}
			i := slices.IndexFunc(pods.Items, func(p corev1.Pod) bool { return ownPod(t, &p) })
			if i < 0 {
				killErr = fmt.Errorf("finding a pod to kill: none of %d is this test's", len(pods.Items))
				return
			}
			p := pods.Items[i]
			killed = p.Namespace + "/" + p.Name
			if killErr = kubelet.Kill(p.Namespace, p.Name); killErr == nil {
				killErr = waitRestarted(c, &p)
			}
		})
	}
	r, _ := runner(t, progress)
	out, err := r.Run(context.Background(), parse(t, fmt.Sprintf(trialSpec, kubernetesTarget(t), 200, 100)))
	if err != nil {
		t.Fatal(err)
	}
	if killErr != nil || killed == "" {
		t.Fatalf("kill: %v (pod %q)", killErr, killed)
	}
	if out.Failure == nil || out.Failure.Kind() != failure.KindWorkerCrashed || !strings.Contains(out.Failure.Error(), killed) {
		t.Fatalf("failure %v, want WorkerCrashed naming pod %s", out.Failure, killed)
	}
	requireTrialsGone(t, kubelet)
}

// waitRestarted waits until the API shows that p's container restarted.
// The crash test holds the driver's progress callback in it, so that the
// measured window is still open when the target's informer learns of the
// exit, however slow a loaded host makes the kubelet's status write.
func waitRestarted(c *k8stest.Cluster, p *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		cur, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("waiting for pod %s/%s to restart: %w", p.Namespace, p.Name, err)
		}
		for _, cs := range cur.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s/%s did not restart: %w", p.Namespace, p.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling the API
		}
	}
}

// Acceptance 3: a 1P1D trial on the kubernetes target runs end to end:
// one Deployment per role, every request through both legs.
func TestPDTrial(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	ctx := context.Background()
	r, led := runner(t, nil)
	out, err := r.Run(ctx, parse(t, fmt.Sprintf(`
name: k8s-pd
seed: 9
target: %s
topology:
  prefill: 1
  decode: 1
  engine: {model: sim-m, max_num_seqs: 32}
router:
  pd_disaggregation: true
  prefill_policy: round_robin
  decode_policy: round_robin
  kv_connector: nixl
workload:
  kind: random
  input_len: 256
  output_len: 8
  num_prompts: 24
  arrival: {kind: poisson, request_rate: 100}
warmup: {requests: 8}
gate: {reference: none}
`, kubernetesTarget(t))))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ledger.StatusOK {
		t.Fatalf("PD trial: %s %v", out.Status, out.Failure)
	}
	row, err := led.Get(ctx, out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Prefill != 1 || row.Decode != 1 || row.Completed != 24 || row.TargetKind != k8starget.Kind {
		t.Fatalf("row: prefill %d decode %d completed %d kind %s", row.Prefill, row.Decode, row.Completed, row.TargetKind)
	}
	// Both workers took one leg of every measured and warm-up request.
	for u, n := range row.PolicyDecisions {
		if n < 24 {
			t.Errorf("worker %s decided %v legs, want every request's", u, n)
		}
	}
	if len(row.PolicyDecisions) != 2 {
		t.Errorf("decisions %v, want the prefill and the decode pod", row.PolicyDecisions)
	}
	requireTrialsGone(t, kubelet)
}

// A declared target.hardware that disagrees with the nodes fails the
// trial before any traffic, naming both.
func TestDeclaredHardwareMustAgree(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	r, _ := runner(t, nil)
	tgt := strings.Replace(kubernetesTarget(t), "kind: kubernetes", "kind: kubernetes\n  hardware: 8xA100-SXM", 1)
	out, err := r.Run(context.Background(), parse(t, fmt.Sprintf(trialSpec, tgt, 24, 200)))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ledger.StatusFailed || out.Failure == nil || !strings.Contains(out.Failure.Error(), "8xA100-SXM") ||
		!strings.Contains(out.Failure.Error(), "1x"+testGPU) || out.Summary.Completed != 0 {
		t.Fatalf("status %s failure %v completed %d, want a failure naming both labels before traffic", out.Status, out.Failure, out.Summary.Completed)
	}
	requireTrialsGone(t, kubelet)
}

// The caller's --assert reaches the in-cluster runner: a bound no trial
// can meet fails the row recorded locally, naming the metric.
func TestInClusterRunnerChecksCallerAssertions(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	r, led := runner(t, nil, trials.Assertion{Metric: "p99_ttft_ms", Op: "<", Value: 0.001})
	out, err := r.Run(context.Background(), parse(t, fmt.Sprintf(trialSpec, kubernetesTarget(t, "runner: in-cluster", "runner_image: "+testImage), 24, 200)))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ledger.StatusFailed || out.Failure == nil || out.Failure.Kind() != failure.KindAssertionViolated ||
		!strings.Contains(out.Failure.Error(), "p99_ttft_ms") {
		t.Fatalf("status %s failure %v, want AssertionViolated on p99_ttft_ms", out.Status, out.Failure)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil || row.FailureKind != failure.KindAssertionViolated || row.Completed != 24 {
		t.Fatalf("row %v: failure %s completed %d", err, row.FailureKind, row.Completed)
	}
	requireTrialsGone(t, kubelet)
}
