package kubernetes

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The typed reasons a worker never became ready, each as soon as the API
// shows it. The provisioner returns them inside *target.StartupError (its
// Err), so errors.As finds them.

// Unschedulable is a pod the scheduler could not place: its message names
// the resource that is short or the selector no node matches.
type Unschedulable struct {
	Pod     string
	Message string // the scheduler's, e.g. "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
}

func (e *Unschedulable) Error() string {
	return fmt.Sprintf("pod %s unschedulable: %s", e.Pod, e.Message)
}

// ImagePullFailed is a pod whose image cannot be pulled.
type ImagePullFailed struct {
	Pod, Image string
	Reason     string // ErrImagePull, ImagePullBackOff, InvalidImageName, ErrImageNeverPull
	Message    string
}

func (e *ImagePullFailed) Error() string {
	return fmt.Sprintf("pod %s: %s: image %s: %s", e.Pod, e.Reason, e.Image, e.Message)
}

// ContainerFailed is an engine container that ended (crashed, exited,
// back-off restarting) or could not be created.
type ContainerFailed struct {
	Pod    string
	Reason string // CrashLoopBackOff, Error, Completed, CreateContainerConfigError, …
	// Code is the exit code of the last run, -1 when it never ran.
	Code     int
	Restarts int
	Message  string
	// LogTail is the end of the container's output (its termination
	// message under FallbackToLogsOnError, or its log).
	LogTail string
}

func (e *ContainerFailed) Error() string {
	s := fmt.Sprintf("pod %s: container %s", e.Pod, e.Reason)
	if e.Code >= 0 {
		s += fmt.Sprintf(", exit code %d", e.Code)
	}
	if e.Restarts > 0 {
		s += fmt.Sprintf(" after %d restarts", e.Restarts)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// ExitCode is the last run's exit code, for failure records.
func (e *ContainerFailed) ExitCode() int { return e.Code }

// Refused is an object the API would not create or a controller could
// not create pods for: a quota, an admission webhook, a policy.
type Refused struct {
	Object  string
	Message string
}

func (e *Refused) Error() string { return fmt.Sprintf("%s refused: %s", e.Object, e.Message) }

// Forbidden is a request the API refused for lack of a permission: the
// verb, the resource and the namespace ("" for a cluster-scoped resource)
// name the rule the target's role lacks (docs/targets.md, "RBAC").
type Forbidden struct {
	Verb, Resource, Namespace string
	// Message is the API's.
	Message string
}

func (e *Forbidden) Error() string {
	where := "cluster-wide"
	if e.Namespace != "" {
		where = "in namespace " + e.Namespace
	}
	return fmt.Sprintf("forbidden: may not %s %s %s (the target's role lacks this permission; see docs/targets.md, RBAC): %s",
		e.Verb, e.Resource, where, e.Message)
}

// asForbidden is err as a *Forbidden naming the request when the API
// refused it for lack of a permission, else err unchanged.
func asForbidden(err error, verb, resource, namespace string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	return &Forbidden{Verb: verb, Resource: resource, Namespace: namespace, Message: err.Error()}
}
