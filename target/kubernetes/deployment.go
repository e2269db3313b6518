package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/autoinfer/autoinfer/target"
)

// deployment is one trial's objects on the cluster and the informers that
// watch them, from provisioning to teardown.
type deployment struct {
	client        *kubeclient.Clientset
	trial         string
	namespace     string
	ownsNamespace bool     // a fresh namespace, deleted at teardown
	deployments   []string // names, in role order
	roles         []roleCount
	log           *slog.Logger
	hardware      *target.Hardware

	watchOnce   sync.Once
	watchErr    error
	stopWatch   context.CancelFunc
	pods        corelisters.PodLister
	deploys     appslisters.DeploymentLister
	teardownMu  sync.Mutex
	tornDown    bool
	teardownErr error

	// forbidden is the first list or watch the API refused for lack of a
	// permission (onWatchError); cancelSync ends the wait for the
	// informers' first list once it is set.
	forbiddenMu sync.Mutex
	forbidden   *Forbidden
	cancelSync  context.CancelFunc
}

// watch starts the informers on the trial's pods and Deployments (a watch
// each, filtered by the trial label) and waits for their first list.
func (d *deployment) watch(ctx context.Context) error {
	d.watchOnce.Do(func() {
		trial := func(o *metav1.ListOptions) { o.LabelSelector = TrialLabel + "=" + d.trial }
		pods := kubeclient.NewInformer(namedCalls[*corev1.PodList]{d.client.CoreV1().Pods(d.namespace), "pods", d.namespace},
			&corev1.Pod{}, trial)
		deploys := kubeclient.NewInformer(namedCalls[*appsv1.DeploymentList]{d.client.AppsV1().Deployments(d.namespace), "deployments", d.namespace},
			&appsv1.Deployment{}, trial)
		d.pods = corelisters.NewPodLister(pods.GetIndexer())
		d.deploys = appslisters.NewDeploymentLister(deploys.GetIndexer())
		sctx, cancelSync := context.WithCancel(ctx)
		defer cancelSync()
		d.forbiddenMu.Lock()
		d.cancelSync = cancelSync
		d.forbiddenMu.Unlock()
		for _, inf := range []cache.SharedIndexInformer{pods, deploys} {
			if err := inf.SetWatchErrorHandlerWithContext(d.onWatchError); err != nil {
				d.watchErr = fmt.Errorf("watching the trial's objects: %w", err)
				return
			}
		}
		wctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { pods.RunWithContext(wctx) })
		wg.Go(func() { deploys.RunWithContext(wctx) })
		d.stopWatch = func() { cancel(); wg.Wait() }
		if !cache.WaitForCacheSync(sctx.Done(), pods.HasSynced, deploys.HasSynced) {
			if d.watchErr = d.watchForbidden(); d.watchErr == nil {
				d.watchErr = fmt.Errorf("watching the pods and deployments of trial %s: %w", d.trial, ctx.Err())
			}
		}
	})
	return d.watchErr
}

// pod returns the trial's pod ns/name from the informer's cache.
func (d *deployment) pod(name string) (*corev1.Pod, bool) {
	p, err := d.pods.Pods(d.namespace).Get(name)
	return p, err == nil
}

// listPods returns the trial's pods that are not being deleted.
func (d *deployment) listPods() []*corev1.Pod {
	all, _ := d.pods.List(klabels.Everything())
	var out []*corev1.Pod
	for _, p := range all {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// refused reports a Deployment whose pods the controllers could not
// create (quota, admission): its ReplicaFailure condition.
func (d *deployment) refused() error {
	deps, _ := d.deploys.List(klabels.Everything())
	for _, dep := range deps {
		for _, c := range dep.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
				err := &Refused{Object: "deployment " + d.namespace + "/" + dep.Name, Message: c.Message}
				return &target.StartupError{Worker: target.Worker{Role: target.Role(dep.Labels[RoleLabel])}, Reason: err.Error(), Err: err}
			}
		}
	}
	return nil
}

// deployment wraps the ready workers for the trial.
func (d *deployment) deployment(ready []readyPod, opts Options) *target.Deployment {
	workers := make([]target.Worker, len(ready))
	members := make([]target.Member, len(ready))
	for i, r := range ready {
		workers[i] = r.worker
		members[i] = &member{d: d, ready: r, first: i == 0}
	}
	dep := target.NewDeployment(workers, members)
	dep.Hardware = d.hardware
	if opts.Runner == RunnerInCluster {
		dep.Remote = &remote{d: d, opts: opts}
	}
	return dep
}

// teardown deletes the trial's Deployments with foreground propagation
// (their pods go first) and its namespace if it made one, and waits until
// they are gone, bounded by ctx. It runs once; later calls return the
// first result.
func (d *deployment) teardown(ctx context.Context) error {
	d.teardownMu.Lock()
	defer d.teardownMu.Unlock()
	if d.tornDown {
		return d.teardownErr
	}
	d.tornDown = true
	if d.stopWatch != nil {
		d.stopWatch()
	}
	began := time.Now()
	d.teardownErr = deleteTrial(ctx, d.client, d.namespace, d.trial, d.ownsNamespace)
	d.log.Info("kubernetes: torn down", "namespace", d.namespace, "took", time.Since(began).Round(time.Millisecond), "err", d.teardownErr)
	return d.teardownErr
}

// deleteTrial deletes a trial's objects in namespace (and the namespace
// itself when withNamespace) and waits until none is left.
func deleteTrial(ctx context.Context, client *kubeclient.Clientset, namespace, trial string, withNamespace bool) error {
	fg := metav1.DeletePropagationForeground
	del := metav1.DeleteOptions{PropagationPolicy: &fg}
	sel := metav1.ListOptions{LabelSelector: TrialLabel + "=" + trial}
	var errs []error
	deps, err := client.AppsV1().Deployments(namespace).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("listing deployments of trial %s: %w", trial, err))
	}
	if deps != nil {
		for _, dep := range deps.Items {
			if err := client.AppsV1().Deployments(namespace).Delete(ctx, dep.Name, del); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting deployment %s/%s: %w", namespace, dep.Name, err))
			}
		}
	}
	// Pods no Deployment owns: the in-cluster runner.
	if pods, err := client.CoreV1().Pods(namespace).List(ctx, sel); err == nil {
		for _, p := range pods.Items {
			if len(p.OwnerReferences) == 0 {
				if err := client.CoreV1().Pods(namespace).Delete(ctx, p.Name, del); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("deleting pod %s/%s: %w", namespace, p.Name, err))
				}
			}
		}
	}
	if withNamespace {
		if err := client.CoreV1().Namespaces().Delete(ctx, namespace, del); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", namespace, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return waitGone(ctx, client, namespace, trial, withNamespace)
}

// waitGone polls until the trial's Deployments, ReplicaSets and Pods (and
// the namespace) no longer exist.
func waitGone(ctx context.Context, client *kubeclient.Clientset, namespace, trial string, withNamespace bool) error {
	sel := metav1.ListOptions{LabelSelector: TrialLabel + "=" + trial}
	for {
		var left []string
		if withNamespace {
			if _, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err == nil {
				left = append(left, "namespace "+namespace)
			} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
				return fmt.Errorf("checking namespace %s: %w", namespace, err)
			}
		}
		if pods, err := client.CoreV1().Pods(namespace).List(ctx, sel); err == nil {
			for _, p := range pods.Items {
				left = append(left, "pod "+p.Name)
			}
		}
		if deps, err := client.AppsV1().Deployments(namespace).List(ctx, sel); err == nil {
			for _, dep := range deps.Items {
				left = append(left, "deployment "+dep.Name)
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("trial %s: still deleting %s (run `autoinfer target cleanup --kubernetes --namespace %s`): %w",
				trial, strings.Join(left, ", "), namespace, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
