package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	k8starget "github.com/autoinfer/autoinfer/target/kubernetes"
	"github.com/autoinfer/autoinfer/target/kubernetes/k8stest"
)

// simOptions is an engine template that runs `autoinfer sim serve` (the
// test kubelet maps testImage to the built binary) on the pod's IP, in
// namespace (a testNamespace) under the docs' namespaced Role (the trial
// tests use a fresh namespace under the ClusterRole).
func simOptions(t *testing.T, namespace string) k8starget.Options {
	t.Helper()
	port, err := target.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	o := k8starget.Options{
		Kubeconfig: targetKubeconfig(t, "namespaced"), Namespace: namespace, Image: testImage,
		Command: []string{"autoinfer", "sim", "serve"},
		Args: []string{"--host", "$(POD_IP)", "--port", "{port}", "--model", "{model}", "--role", "{role}",
			"--profile", "fast", "{engine_args}"},
		Port:           port,
		Resources:      k8starget.Resources{Limits: map[string]string{"nvidia.com/gpu": "1"}},
		StartupTimeout: 10 * time.Minute, // failures must come from the API, long before this
	}
	o.Default()
	return o
}

func provision(t *testing.T, o k8starget.Options, topo target.Topology) (*target.Deployment, error) {
	t.Helper()
	if err := o.Validate(topo); err != nil {
		t.Fatalf("options: %v", err)
	}
	p, err := o.Provisioner(nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.Provision(context.Background(), topo)
}

// trialOf reads the trial id from a worker's pod name (ns/autoinfer-<trial>-<role>-…).
func trialOf(t *testing.T, w target.Worker) string {
	t.Helper()
	c := env.Cluster(t)
	ns, name, _ := strings.Cut(w.Name, "/")
	p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Labels[k8starget.TrialLabel]
}

// requireNothingLabelled fails when any Deployment, ReplicaSet or Pod in
// namespace ("": any namespace, and then namespaces too) carries
// selector's labels (checked as the harness's admin). Tests run in
// parallel, so a selector or a namespace picks the test's own objects.
func requireNothingLabelled(t *testing.T, namespace, selector string) {
	t.Helper()
	c := env.Cluster(t)
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: selector}
	var left []string
	if namespace == "" {
		nss, err := c.Client.CoreV1().Namespaces().List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nss.Items {
			left = append(left, "namespace "+n.Name)
		}
	}
	deps, err := c.Client.AppsV1().Deployments(namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		left = append(left, "deployment "+d.Namespace+"/"+d.Name)
	}
	rss, err := c.Client.ReplicaSets(namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rss.Items {
		left = append(left, "replicaset "+r.Namespace+"/"+r.Name)
	}
	pods, err := c.Client.CoreV1().Pods(namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Namespace+"/"+p.Name)
	}
	if len(left) > 0 {
		t.Fatalf("objects labelled %s remain: %s", selector, strings.Join(left, ", "))
	}
}

// Two collocated simulated engines come up as pods that answer, carry the
// node's hardware identity, report a killed container as an exit naming
// the pod, and are gone after Close.
func TestProvisionCollocatedInGivenNamespace(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	o := simOptions(t, testNamespace(t))
	dep, err := provision(t, o, target.Topology{Replicas: 2, Engine: engine.Config{Model: testModel, MaxNumSeqs: 16}})
	if err != nil {
		t.Fatal(err)
	}
	trial := trialOf(t, dep.Workers[0])
	closed := false
	defer func() {
		if !closed {
			_ = dep.Close(context.Background())
		}
	}()
	if len(dep.Workers) != 2 {
		t.Fatalf("%d workers, want 2", len(dep.Workers))
	}
	for i, w := range dep.Workers {
		if w.Role != target.Collocated || w.Rank != i || !strings.HasPrefix(w.URL, "http://127.") {
			t.Errorf("worker %d: %+v", i, w)
		}
		resp, err := http.Get(w.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), testModel) {
			t.Errorf("worker %s /v1/models: %s", w, body)
		}
	}
	if dep.Hardware == nil || dep.Hardware.Label != "1x"+testGPU || len(dep.Hardware.Nodes) != 1 || dep.Hardware.Nodes[0] != testNode {
		t.Errorf("hardware %+v, want 1x%s on %s", dep.Hardware, testGPU, testNode)
	}
	if exits := dep.Exits(); len(exits) != 0 {
		t.Fatalf("exits before any crash: %v", exits)
	}

	// A crash: the kubelet reports the exit and restarts the container.
	ns, name, _ := strings.Cut(dep.Workers[1].Name, "/")
	if err := kubelet.Kill(ns, name); err != nil {
		t.Fatal(err)
	}
	var exits []target.Exit
	for exits = dep.Exits(); len(exits) == 0; exits = dep.Exits() {
		time.Sleep(20 * time.Millisecond) // polling the informer's cache
	}
	if len(exits) != 1 || exits[0].Worker.Name != dep.Workers[1].Name || exits[0].ExitCode != 137 && exits[0].ExitCode != -1 {
		t.Fatalf("exits %+v, want worker 1 (pod %s) killed", exits, dep.Workers[1].Name)
	}
	t.Logf("crash reported: %s", exits[0].Reason)

	closed = true
	if err := dep.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	requireNothingLabelled(t, "", k8starget.TrialLabel+"="+trial)
}

// What the API shows fails provisioning at once with a typed error that
// names the cause, and nothing is left behind.
func TestProvisionTypedFailures(t *testing.T) {
	t.Parallel()
	env.Kubelet(t)
	ns := testNamespace(t)
	topo := target.Topology{Replicas: 1, Engine: engine.Config{Model: testModel}}
	cases := []struct {
		name  string
		edit  func(*k8starget.Options)
		check func(t *testing.T, err error)
	}{
		{"insufficient gpus", func(o *k8starget.Options) { o.Resources.Limits["nvidia.com/gpu"] = fmt.Sprint(testGPUs + 1) }, func(t *testing.T, err error) {
			var u *k8starget.Unschedulable
			if !errors.As(err, &u) || !strings.Contains(u.Message, "Insufficient nvidia.com/gpu") {
				t.Fatalf("got %v, want Unschedulable naming nvidia.com/gpu", err)
			}
		}},
		{"no matching node", func(o *k8starget.Options) { o.NodeSelector = map[string]string{"pool": "a100"} }, func(t *testing.T, err error) {
			var u *k8starget.Unschedulable
			if !errors.As(err, &u) || !strings.Contains(u.Message, "selector") {
				t.Fatalf("got %v, want Unschedulable naming the selector", err)
			}
		}},
		{"image pull", func(o *k8starget.Options) { o.Image = "registry.invalid/vllm:nope" }, func(t *testing.T, err error) {
			var p *k8starget.ImagePullFailed
			if !errors.As(err, &p) || p.Image != "registry.invalid/vllm:nope" || !strings.Contains(err.Error(), "registry.invalid/vllm:nope") {
				t.Fatalf("got %v, want ImagePullFailed naming the image", err)
			}
		}},
		{"crash", func(o *k8starget.Options) { o.Args = append(o.Args, "--no-such-flag") }, func(t *testing.T, err error) {
			var c *k8starget.ContainerFailed
			if !errors.As(err, &c) || c.Code != 2 || !strings.Contains(c.LogTail, "unknown flag: --no-such-flag") {
				t.Fatalf("got %v, want ContainerFailed with exit code 2 and the log's last lines", err)
			}
			if !strings.Contains(err.Error(), "unknown flag") {
				t.Errorf("message %q lacks the log tail", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := simOptions(t, ns)
			tc.edit(&o)
			began := time.Now()
			dep, err := provision(t, o, topo)
			if err == nil {
				_ = dep.Close(context.Background())
				t.Fatal("provisioned; want a failure")
			}
			t.Logf("failed after %s: %v", time.Since(began).Round(time.Millisecond), err)
			var se *target.StartupError
			if !errors.As(err, &se) {
				t.Fatalf("%v is not a *target.StartupError", err)
			}
			tc.check(t, err)
			requireNothingLabelled(t, ns, k8starget.ManagedByLabel+"=autoinfer")
		})
	}
}

// listManaged selects every object autoinfer created.
func listManaged() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: k8starget.ManagedByLabel + "=autoinfer"}
}

// A quota the namespace's pods would exceed: the ReplicaSet controller
// cannot create them, and the Deployment's ReplicaFailure condition is a
// typed Refused carrying the API's message.
func TestProvisionRefusedByQuota(t *testing.T) {
	t.Parallel()
	env.Kubelet(t)
	c := env.Cluster(t)
	ctx := context.Background()
	ns := testNamespace(t)
	o := simOptions(t, ns)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-gpus"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("0")}},
	}
	if _, err := c.Client.ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Admission enforces a quota once the quota controller has counted it.
	for q := quota; len(q.Status.Hard) == 0; {
		time.Sleep(20 * time.Millisecond) // polling the quota's status
		var err error
		if q, err = c.Client.ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	dep, err := provision(t, o, target.Topology{Replicas: 1, Engine: engine.Config{Model: testModel}})
	if err == nil {
		_ = dep.Close(ctx)
		t.Fatal("provisioned past a quota of 0 GPUs")
	}
	t.Logf("failed after %s: %v", time.Since(began).Round(time.Millisecond), err)
	var r *k8starget.Refused
	if !errors.As(err, &r) || !strings.Contains(r.Message, "exceeded quota") || !strings.Contains(r.Message, "nvidia.com/gpu") {
		t.Fatalf("got %v, want Refused with the quota message", err)
	}
	requireNothingLabelled(t, ns, k8starget.ManagedByLabel+"=autoinfer")
}

// A node lost under a running deployment (its heartbeats stop; the node
// lifecycle controller marks its pods not Ready) is a worker exit naming
// the pod and the node. The node is this test's own, tainted so that the
// other tests' pods, which run meanwhile, stay off it.
func TestNodeLostIsAnExit(t *testing.T) {
	t.Parallel()
	env.Kubelet(t)
	const node, taint = "gpu-node-lost", "k8stest/node-lost"
	kubelet := env.AddNode(t, k8stest.KubeletOptions{
		Node: node, GPUs: 1, GPUProduct: testGPU, Images: map[string]string{testImage: autoinferBin},
		Taints: []corev1.Taint{{Key: taint, Effect: corev1.TaintEffectNoSchedule}},
	})
	ctx := context.Background()
	o := simOptions(t, testNamespace(t))
	o.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	o.Tolerations = []k8starget.Toleration{{Key: taint, Operator: "Exists", Effect: "NoSchedule"}}
	dep, err := provision(t, o, target.Topology{Replicas: 1, Engine: engine.Config{Model: testModel}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dep.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	lostAt := time.Now()
	if err := kubelet.SetNodeLost(ctx, true); err != nil {
		t.Fatal(err)
	}
	var exits []target.Exit
	for exits = dep.Exits(); len(exits) == 0; exits = dep.Exits() {
		time.Sleep(50 * time.Millisecond) // polling the informer's cache
	}
	lostFor := time.Since(lostAt)
	if err := kubelet.SetNodeLost(ctx, false); err != nil {
		t.Fatal(err)
	}
	if len(exits) != 1 || exits[0].Worker.Name != dep.Workers[0].Name || !strings.Contains(exits[0].Reason, "no longer Ready") ||
		!strings.Contains(exits[0].Reason, node) {
		t.Fatalf("exits %+v, want pod %s no longer Ready on %s", exits, dep.Workers[0].Name, node)
	}
	t.Logf("node lost reported after %s: %s", lostFor.Round(time.Millisecond), exits[0].Reason)
}
