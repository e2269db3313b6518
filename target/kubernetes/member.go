package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoinfer/autoinfer/target"
)

// member is the deployment's member for one pod. Kubernetes objects are
// torn down together (the Deployments and the namespace), so every
// member's Stop runs the one teardown; only the first member reports its
// error, the others wait for it.
type member struct {
	d     *deployment
	ready readyPod
	first bool
}

var _ target.Exiter = (*member)(nil)

// Stop tears the trial's objects down and waits until they are gone.
func (m *member) Stop(ctx context.Context) error {
	err := m.d.teardown(ctx)
	if !m.first {
		return nil
	}
	return err
}

// Exited reports the pod's end when it was deleted, its container
// restarted, or it stopped being Ready (its node lost, say) since it was
// provisioned, as the informer's cache shows it.
func (m *member) Exited() (target.Exit, bool) {
	w := m.ready.worker
	exit := target.Exit{Worker: w, ExitCode: -1}
	p, ok := m.d.pod(podName(w.Name))
	switch {
	case !ok || p.UID != m.ready.uid:
		exit.Reason = fmt.Sprintf("pod %s was deleted", w.Name)
		return exit, true
	case p.DeletionTimestamp != nil:
		exit.Reason = fmt.Sprintf("pod %s is being deleted", w.Name)
		return exit, true
	}
	var restarts int32
	var last *corev1.ContainerStateTerminated
	for _, cs := range p.Status.ContainerStatuses {
		restarts += cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = t
		}
		if t := cs.State.Terminated; t != nil {
			last = t
		}
	}
	if restarts > m.ready.restarts {
		exit.Reason = fmt.Sprintf("container of pod %s restarted", w.Name)
		if last != nil {
			exit.ExitCode, exit.LogTail = int(last.ExitCode), last.Message
			exit.Reason += fmt.Sprintf(" (exit code %d)", last.ExitCode)
		}
		return exit, true
	}
	if !podReady(p) {
		exit.Reason = fmt.Sprintf("pod %s on node %s is no longer Ready", w.Name, p.Spec.NodeName)
		return exit, true
	}
	return target.Exit{}, false
}

// podName is the name part of namespace/name.
func podName(key string) string {
	for i := range key {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}
