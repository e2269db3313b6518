package kubernetes

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoinfer/autoinfer/target"
)

// Runner pod protocol: the payload goes in through PayloadEnv (base64),
// the result comes back as the log line that starts with ResultPrefix.
const (
	PayloadEnv   = "AUTOINFER_RUNNER_PAYLOAD"
	ResultPrefix = "autoinfer-runner-result: "
	runnerRole   = "runner"
)

// remote runs `autoinfer trial runner` in a pod of the trial's namespace.
type remote struct {
	d    *deployment
	opts Options
}

var _ target.RemoteRunner = (*remote)(nil)

// RunRemote starts the runner pod, waits until it ends and returns its
// result line. The pod is deleted with the rest of the trial.
func (r *remote) RunRemote(ctx context.Context, payload []byte) ([]byte, error) {
	d := r.d
	name := fmt.Sprintf("autoinfer-%s-%s", d.trial, runnerRole)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{TrialLabel: d.trial, ManagedByLabel: managedBy, RoleLabel: runnerRole}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: runnerRole, Image: r.opts.RunnerImage, ImagePullPolicy: corev1.PullPolicy(r.opts.ImagePullPolicy),
				Command:                  []string{"autoinfer", "trial", "runner"},
				Env:                      []corev1.EnvVar{{Name: PayloadEnv, Value: base64.StdEncoding.EncodeToString(payload)}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	for _, s := range r.opts.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if _, err := d.client.CoreV1().Pods(d.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating runner pod: %w", asForbidden(err, "create", "pods", d.namespace))
	}
	d.log.Info("kubernetes: runner pod started", "pod", d.namespace+"/"+name, "image", r.opts.RunnerImage)
	if err := r.waitDone(ctx, name); err != nil {
		return nil, err
	}
	logs, err := d.client.CoreV1().Pods(d.namespace).GetLogs(name, &corev1.PodLogOptions{Container: runnerRole}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading runner pod %s/%s output: %w", d.namespace, name, asForbidden(err, "get", "pods/log", d.namespace))
	}
	for line := range bytes.Lines(logs) {
		if rest, ok := bytes.CutPrefix(line, []byte(ResultPrefix)); ok {
			return bytes.TrimSpace(rest), nil
		}
	}
	return nil, fmt.Errorf("runner pod %s/%s printed no result; last lines:\n%s", d.namespace, name, tailLines(string(logs), 20))
}

// waitDone waits for the runner pod to succeed; a failure, an image it
// cannot pull or any other pod failure ends the wait with its reason.
func (r *remote) waitDone(ctx context.Context, name string) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if p, ok := r.d.pod(name); ok {
			switch p.Status.Phase {
			case corev1.PodSucceeded:
				return nil
			case corev1.PodFailed:
				return fmt.Errorf("runner pod %s failed: %w", podKey(p), podFailure(p))
			}
			if err := podFailure(p); err != nil {
				if _, crashed := err.(*ContainerFailed); !crashed {
					return fmt.Errorf("runner pod: %w", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for runner pod %s/%s: %w", r.d.namespace, name, ctx.Err())
		case <-tick.C:
		}
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
