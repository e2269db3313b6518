package k8stest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// GPUProductLabel is the label NVIDIA's GPU feature discovery puts on
// nodes; the target reads hardware identity from it.
const GPUProductLabel = "nvidia.com/gpu.product"

// KubeletOptions describe the node a Kubelet registers and how it runs
// containers.
type KubeletOptions struct {
	// Node is the node's name.
	Node string
	// GPUs is the node's nvidia.com/gpu capacity.
	GPUs int
	// GPUProduct is the node's GPUProductLabel value.
	GPUProduct string
	// Images maps an image name to the local executable that replaces the
	// first word of its container's command (there is no container
	// runtime). A pod whose image is not here fails to pull.
	Images map[string]string
	// Dir receives one log file per container run.
	Dir string
	// Taints are the node's own taints (pods without a toleration stay
	// off it); the node counts as schedulable with exactly these.
	Taints []corev1.Taint
}

// Kubelet is the test-side kubelet: it registers a Node, renews its Lease,
// runs each Pod bound to it as local processes on a pod IP of its own
// (127.x.y.z), reports the Pod's status as a kubelet would, and deletes
// Pods with grace 0 once their processes stopped.
type Kubelet struct {
	opts   KubeletOptions
	client *Admin
	ipA    int // the second octet of this kubelet's pod IPs

	cancel context.CancelFunc
	wg     sync.WaitGroup
	logs   *http.Server // the endpoint pods/log requests reach
	port   int          // its port

	mu      sync.Mutex
	pods    map[string]*podRun // by namespace/name
	nextIP  int
	started []*corev1.Pod // every pod run, as first seen, in order
	lost    bool          // heartbeats stopped (SetNodeLost)
}

// StartKubelet registers the node and returns once the node is Ready and
// the scheduler may use it (the controllers removed their not-ready
// taints). Stop ends it.
func StartKubelet(ctx context.Context, client *Admin, opts KubeletOptions) (*Kubelet, error) {
	return startKubelet(ctx, client, opts, 100+rand.IntN(ipOctets))
}

// ipOctets is how many second octets pod IPs (127.ipA.x.y) may use, from
// 100 on.
const ipOctets = 150

// startKubelet is StartKubelet with the second octet of the pod IPs
// given, so that kubelets of one control plane never share a pod IP.
func startKubelet(ctx context.Context, client *Admin, opts KubeletOptions, ipA int) (*Kubelet, error) {
	k := &Kubelet{opts: opts, client: client, ipA: ipA, pods: map[string]*podRun{}}
	srv, port, err := k.serveLogs()
	if err != nil {
		return nil, err
	}
	k.logs, k.port = srv, port
	if err := k.register(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.wg.Go(func() { k.renewLease(rctx) })
	if err := k.watchPods(rctx); err != nil {
		k.Stop()
		return nil, err
	}
	if err := k.waitSchedulable(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// register creates the Node and writes its status: capacity with GPUs,
// Ready, a loopback address.
func (k *Kubelet) register(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.opts.Node, Labels: map[string]string{
		"kubernetes.io/hostname": k.opts.Node,
		"kubernetes.io/os":       "linux",
		GPUProductLabel:          k.opts.GPUProduct,
		"nvidia.com/gpu.count":   fmt.Sprint(k.opts.GPUs),
	}}, Spec: corev1.NodeSpec{Taints: k.opts.Taints}}
	if _, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", k.opts.Node, err)
	}
	return k.updateNodeStatus(ctx)
}

// SetNodeLost stops (true) or resumes (false) the node's heartbeats, as
// a machine that drops off the network would. Without them the node
// lifecycle controller marks the node unknown and its pods not Ready
// after its grace period (the harness runs it with a short one). Resuming
// returns once the node is schedulable again.
func (k *Kubelet) SetNodeLost(ctx context.Context, lost bool) error {
	k.mu.Lock()
	k.lost = lost
	k.mu.Unlock()
	if lost {
		return nil
	}
	if err := k.renewOnce(ctx); err != nil {
		return err
	}
	if err := k.updateNodeStatus(ctx); err != nil {
		return err
	}
	return k.waitSchedulable(ctx)
}

// updateNodeStatus retries on conflict: the node lifecycle controller
// edits new Nodes too.
func (k *Kubelet) updateNodeStatus(ctx context.Context) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      *resource.NewQuantity(int64(k.opts.GPUs), resource.DecimalSI),
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := k.client.CoreV1().Nodes().Get(ctx, k.opts.Node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Capacity, n.Status.Allocatable = capacity, capacity
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: k.opts.Node}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(k.port)
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: Version, OperatingSystem: "linux", Architecture: "amd64"}
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "k8stest kubelet is posting its status", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing node %s status: %w", k.opts.Node, err)
	}
	return nil
}

// leaseRenewal is how often the kubelet renews its Lease; the harness's
// node lifecycle controller declares a node lost after nodeGracePeriod
// without a renewal. The node-lost test waits out the grace period, so it
// is short; a healthy node stays Ready through a 5 s stall of its
// renewals.
const (
	leaseRenewal    = time.Second
	nodeGracePeriod = 6 * time.Second
)

// renewLease keeps the node's Lease fresh unless the node is lost.
func (k *Kubelet) renewLease(ctx context.Context) {
	for {
		k.mu.Lock()
		lost := k.lost
		k.mu.Unlock()
		if !lost {
			_ = k.renewOnce(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(leaseRenewal):
		}
	}
}

// renewOnce creates or renews the node's Lease.
func (k *Kubelet) renewOnce(ctx context.Context) error {
	leases := k.client.Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, k.opts.Node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.opts.Node},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(k.opts.Node), LeaseDurationSeconds: ptr.To(int32(nodeGracePeriod / time.Second)), RenewTime: &now,
			},
		}, metav1.CreateOptions{})
	case err == nil:
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renewing node %s lease: %w", k.opts.Node, err)
	}
	return nil
}

// waitSchedulable waits until the node is Ready with no taints but its
// own (the controllers remove their not-ready and unreachable ones).
func (k *Kubelet) waitSchedulable(ctx context.Context) error {
	own := func(t corev1.Taint) bool {
		return slices.ContainsFunc(k.opts.Taints, func(o corev1.Taint) bool { return o.MatchTaint(&t) })
	}
	for {
		n, err := k.client.CoreV1().Nodes().Get(ctx, k.opts.Node, metav1.GetOptions{})
		if err == nil && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return !own(t) }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not schedulable (taints %v): %w", k.opts.Node, n.Spec.Taints, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchPods runs an informer on the Pods bound to this node.
func (k *Kubelet) watchPods(ctx context.Context) error {
	inf := kubeclient.NewInformer(k.client.CoreV1().Pods(""), &corev1.Pod{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.opts.Node).String()
	})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.sync(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				k.forget(p)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	k.wg.Go(func() { inf.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("watching pods: the cache never synced")
	}
	return nil
}

// sync starts a pod's containers the first time the pod is seen and stops
// them once it is being deleted.
func (k *Kubelet) sync(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	k.mu.Lock()
	defer k.mu.Unlock()
	run := k.pods[key]
	switch {
	case run == nil && p.DeletionTimestamp != nil:
		k.wg.Go(func() { k.deletePod(ctx, p) })
	case run == nil && ctx.Err() == nil:
		k.nextIP++
		ip := fmt.Sprintf("127.%d.%d.%d", k.ipA, k.nextIP/250, k.nextIP%250+1)
		run = newPodRun(k, p, ip)
		k.pods[key] = run
		k.started = append(k.started, p.DeepCopy())
		k.wg.Go(func() { run.run(ctx) })
	case run != nil && p.DeletionTimestamp != nil:
		run.terminate()
	}
}

// forget stops a pod that vanished from the API.
func (k *Kubelet) forget(p *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if run := k.pods[p.Namespace+"/"+p.Name]; run != nil {
		run.terminate()
	}
}

// done removes a finished pod run.
func (k *Kubelet) done(run *podRun) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pods[run.key] == run {
		delete(k.pods, run.key)
	}
}

// deletePod finishes a pod's graceful deletion: with its processes gone,
// the kubelet deletes it with grace 0 (otherwise it stays Terminating).
func (k *Kubelet) deletePod(ctx context.Context, p *corev1.Pod) {
	err := k.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		fmt.Printf("k8stest kubelet: deleting pod %s/%s: %v\n", p.Namespace, p.Name, err)
	}
}

// Kill ends the processes of the pod with SIGKILL, as an OOM kill or a
// crash would; the kubelet then reports the exit and restarts the
// container (restart policy Always). It fails when no such pod runs here.
func (k *Kubelet) Kill(namespace, name string) error {
	k.mu.Lock()
	run := k.pods[namespace+"/"+name]
	k.mu.Unlock()
	if run == nil {
		return fmt.Errorf("kubelet %s runs no pod %s/%s", k.opts.Node, namespace, name)
	}
	return run.kill()
}

// Started lists every pod this kubelet ran, as it was when first seen
// (tests running in parallel pick theirs by labels or environment), in
// start order. The pods are copies.
func (k *Kubelet) Started() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*corev1.Pod, len(k.started))
	for i, p := range k.started {
		out[i] = p.DeepCopy()
	}
	return out
}

// Node is the name of the node this kubelet registered.
func (k *Kubelet) Node() string { return k.opts.Node }

// Stop ends every pod's processes and the kubelet's loops. The node stays
// registered; its pods are left as they are in the API.
func (k *Kubelet) Stop() {
	if k.cancel != nil {
		k.cancel()
	}
	if k.logs != nil {
		_ = k.logs.Close()
	}
	k.wg.Wait()
}

// errPodGone ends a pod run whose pod no longer exists.
var errPodGone = errors.New("pod gone")
