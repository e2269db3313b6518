package kubernetes

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoinfer/autoinfer/target"
)

// imagePullReasons are the waiting reasons of a container whose image the
// kubelet cannot get.
var imagePullReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}

// createReasons are the waiting reasons of a container the kubelet cannot
// create (a missing Secret or ConfigMap, a bad volume).
var createReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// podFailure reads what the API says about a pod that will not become a
// worker: unschedulable, an image that cannot be pulled, a container that
// ended or cannot be created. nil means the pod may still come up.
func podFailure(p *corev1.Pod) error {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &Unschedulable{Pod: podKey(p), Message: c.Message}
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		return &ContainerFailed{Pod: podKey(p), Reason: "pod failed (" + p.Status.Reason + ")", Code: -1, Message: p.Status.Message}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch {
			case slices.Contains(imagePullReasons, w.Reason):
				return &ImagePullFailed{Pod: podKey(p), Image: cs.Image, Reason: w.Reason, Message: w.Message}
			case slices.Contains(createReasons, w.Reason):
				return &ContainerFailed{Pod: podKey(p), Reason: w.Reason, Code: -1, Message: w.Message}
			}
		}
		// An engine never exits on its own: any end of a run is a failure,
		// reported with its exit code and the end of its output.
		term := cs.State.Terminated
		if term == nil {
			term = cs.LastTerminationState.Terminated
		}
		if term != nil {
			reason := term.Reason
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				reason = w.Reason
			}
			return &ContainerFailed{Pod: podKey(p), Reason: reason, Code: int(term.ExitCode), Restarts: int(cs.RestartCount), LogTail: term.Message}
		}
	}
	return nil
}

// startupError wraps a pod failure for the trial runner.
func startupError(p *corev1.Pod, err error) error {
	se := &target.StartupError{
		Worker: target.Worker{Role: target.Role(p.Labels[RoleLabel]), Name: podKey(p)},
		Reason: err.Error(),
		Err:    err,
	}
	if cf, ok := err.(*ContainerFailed); ok {
		se.LogTail = cf.LogTail
	}
	return se
}
