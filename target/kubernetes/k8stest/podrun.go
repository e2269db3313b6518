package k8stest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
)

// podRun is one Pod's life on the test kubelet: its first container run
// as a local process, restarted on exit (restart policy Always) with a
// back-off, its status written as a kubelet would.
type podRun struct {
	k        *Kubelet
	key      string
	pod      *corev1.Pod // as first seen: the spec does not change
	ip       string
	started  metav1.Time
	termOnce sync.Once
	term     chan struct{} // closed when the pod is being deleted

	mu  sync.Mutex
	cur *exec.Cmd // the running process, nil between runs
}

func newPodRun(k *Kubelet, p *corev1.Pod, ip string) *podRun {
	return &podRun{k: k, key: p.Namespace + "/" + p.Name, pod: p.DeepCopy(), ip: ip, started: metav1.Now(), term: make(chan struct{})}
}

func (r *podRun) terminate() { r.termOnce.Do(func() { close(r.term) }) }

// run drives the pod until it is deleted (then deletes it with grace 0) or
// the kubelet stops (then leaves it).
func (r *podRun) run(ctx context.Context) {
	defer r.k.done(r)
	c := r.pod.Spec.Containers[0]
	bin, ok := r.k.opts.Images[c.Image]
	if !ok {
		r.pullFailure(ctx, c)
	} else {
		r.runContainer(ctx, c, bin)
	}
	select {
	case <-r.term:
		r.k.deletePod(ctx, r.pod)
	default:
	}
}

// pullFailure reports the image as unpullable, as a kubelet would: first
// ErrImagePull, then ImagePullBackOff, until the pod is deleted.
func (r *podRun) pullFailure(ctx context.Context, c corev1.Container) {
	msg := fmt.Sprintf("failed to pull and unpack image %q: pull access denied, repository does not exist or may require authorization", c.Image)
	reasons := []string{"ErrImagePull", "ImagePullBackOff"}
	for i := 0; ; i++ {
		reason := reasons[min(i, 1)]
		err := r.writeStatus(ctx, corev1.PodPending, false, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		})
		if err != nil || r.wait(ctx, time.Second) {
			return
		}
	}
}

// runContainer runs c until the pod is deleted or the kubelet stops.
func (r *podRun) runContainer(ctx context.Context, c corev1.Container, bin string) {
	restarts := int32(0)
	var last *corev1.ContainerStateTerminated
	logPath := filepath.Join(r.k.opts.Dir, strings.ReplaceAll(r.key, "/", "_")+".log")
	for {
		startedAt := metav1.Now()
		cmd, offset, err := r.start(c, bin, logPath)
		if err != nil {
			last = &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: startedAt, FinishedAt: metav1.Now()}
		} else {
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			status := corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, Ready: true, Started: ptrBool(true), RestartCount: restarts,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}},
			}
			if last != nil {
				status.LastTerminationState = corev1.ContainerState{Terminated: last}
			}
			if r.writeStatus(ctx, corev1.PodRunning, true, status) != nil {
				r.stop(cmd, done)
				return
			}
			select {
			case <-done:
			case <-r.term:
				r.stop(cmd, done)
				return
			case <-ctx.Done():
				r.stop(cmd, done)
				return
			}
			r.mu.Lock()
			r.cur = nil
			r.mu.Unlock()
			last = terminated(cmd, c, logPath, offset, startedAt)
		}
		if r.finished(ctx, c, last, restarts) {
			return
		}
		restarts++
		err = r.writeStatus(ctx, corev1.PodRunning, false, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, RestartCount: restarts, Started: ptrBool(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CrashLoopBackOff", Message: fmt.Sprintf("back-off restarting failed container %s in pod %s", c.Name, r.key),
			}},
			LastTerminationState: corev1.ContainerState{Terminated: last},
		})
		if err != nil || r.wait(ctx, min(time.Second<<(restarts-1), 10*time.Second)) {
			return
		}
	}
}

// finished ends a pod whose restart policy does not restart this exit:
// it is Succeeded or Failed and stays so until deleted.
func (r *podRun) finished(ctx context.Context, c corev1.Container, last *corev1.ContainerStateTerminated, restarts int32) bool {
	policy := r.pod.Spec.RestartPolicy
	if policy == corev1.RestartPolicyAlways || policy == "" || (policy == corev1.RestartPolicyOnFailure && last.ExitCode != 0) {
		return false
	}
	phase := corev1.PodSucceeded
	if last.ExitCode != 0 {
		phase = corev1.PodFailed
	}
	err := r.writeStatus(ctx, phase, false, corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, RestartCount: restarts, Started: ptrBool(false),
		State: corev1.ContainerState{Terminated: last},
	})
	if err == nil {
		select { // the pod stays finished until deleted or the kubelet stops
		case <-r.term:
		case <-ctx.Done():
		}
	}
	return true
}

// start runs the container's command with argv[0] mapped to bin; offset
// is where this run's output begins in the log.
func (r *podRun) start(c corev1.Container, bin, logPath string) (*exec.Cmd, int64, error) {
	env, err := r.env(c)
	if err != nil {
		return nil, 0, err
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return nil, 0, errors.New("the test kubelet needs a container command (images have no entrypoint here)")
	}
	for i, a := range argv {
		argv[i] = expandVars(a, env)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("opening container log: %w", err)
	}
	defer f.Close() // the child has its own descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("opening container log: %w", err)
	}
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("starting %s: %w", bin, err)
	}
	r.mu.Lock()
	r.cur = cmd
	r.mu.Unlock()
	return cmd, st.Size(), nil
}

// stop ends a running container: SIGTERM to its process group, SIGKILL
// after 2 s.
func (r *podRun) stop(cmd *exec.Cmd, done <-chan struct{}) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	r.mu.Lock()
	r.cur = nil
	r.mu.Unlock()
}

// kill SIGKILLs the running container's process group.
func (r *podRun) kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return fmt.Errorf("pod %s has no running container", r.key)
	}
	return syscall.Kill(-r.cur.Process.Pid, syscall.SIGKILL)
}

// wait pauses d; it reports true when the pod is being deleted or the
// kubelet stops.
func (r *podRun) wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-r.term:
		return true
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// writeStatus replaces the pod's status with phase, readiness and the one
// container's status, retrying on conflict.
func (r *podRun) writeStatus(ctx context.Context, phase corev1.PodPhase, ready bool, cs corev1.ContainerStatus) error {
	pods := r.k.client.CoreV1().Pods(r.pod.Namespace)
	cs.ContainerID = "k8stest://" + string(r.pod.UID)
	cs.ImageID = cs.Image
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p, err := pods.Get(ctx, r.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != r.pod.UID {
			return errPodGone
		}
		st := &p.Status
		st.Phase, st.HostIP, st.PodIP = phase, "127.0.0.1", r.ip
		st.HostIPs, st.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: r.ip}}
		st.StartTime = &r.started
		st.ContainerStatuses = []corev1.ContainerStatus{cs}
		readiness := corev1.ConditionFalse
		if ready {
			readiness = corev1.ConditionTrue
		}
		setCondition(st, corev1.PodInitialized, corev1.ConditionTrue)
		setCondition(st, corev1.ContainersReady, readiness)
		setCondition(st, corev1.PodReady, readiness)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return errPodGone
	}
	return err
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, metav1.Now()
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.Now()})
}

// env resolves the container's environment: literal values (with $(VAR)
// references to earlier ones), the downward API fields a pod template
// commonly uses (an Indexed Job's JOB_COMPLETION_INDEX reads an
// annotation), and keys of Secrets in the pod's namespace.
func (r *podRun) env(c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandVars(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = r.field(e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			sec, err := kubeclient.Resource[*corev1.Secret, *corev1.SecretList](r.k.client.core, "secrets", r.pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("env %s: secret %s: %w", e.Name, ref.Name, err)
			}
			env[e.Name] = string(sec.Data[ref.Key])
		}
	}
	return env, nil
}

// field is a downward API field: fixed paths and metadata.annotations['k']
// or metadata.labels['k'].
func (r *podRun) field(path string) string {
	for prefix, m := range map[string]map[string]string{"metadata.annotations": r.pod.Annotations, "metadata.labels": r.pod.Labels} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			return m[strings.TrimSuffix(key, "']")]
		}
	}
	return map[string]string{
		"status.podIP": r.ip, "status.hostIP": "127.0.0.1", "metadata.name": r.pod.Name,
		"metadata.namespace": r.pod.Namespace, "spec.nodeName": r.pod.Spec.NodeName,
	}[path]
}

// expandVars replaces $(NAME) with env's value, as Kubernetes does in
// command, args and env values; $$ escapes, unknown names stay.
func expandVars(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		end := strings.IndexByte(s[i:], ')')
		if s[i+1] != '(' || end < 0 {
			b.WriteByte(s[i])
			continue
		}
		name := s[i+2 : i+end]
		if v, ok := env[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+end+1])
		}
		i += end
	}
	return b.String()
}

// terminated describes a finished run; with FallbackToLogsOnError and a
// failure, its message is the end of the run's output, as a kubelet does
// (at most 80 lines and 2 KiB).
func terminated(cmd *exec.Cmd, c corev1.Container, logPath string, offset int64, startedAt metav1.Time) *corev1.ContainerStateTerminated {
	st := &corev1.ContainerStateTerminated{ExitCode: int32(cmd.ProcessState.ExitCode()), Reason: "Error", StartedAt: startedAt, FinishedAt: metav1.Now()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.ExitCode, st.Signal = 128+int32(ws.Signal()), int32(ws.Signal())
	}
	if st.ExitCode == 0 {
		st.Reason = "Completed"
		return st
	}
	if c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		if b, err := os.ReadFile(logPath); err == nil && int64(len(b)) >= offset {
			st.Message = tailText(string(b[offset:]), 80, 2048)
		}
	}
	return st
}

// tailText keeps the last lines lines of s, at most max bytes.
func tailText(s string, lines, maxBytes int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	out := strings.Join(parts, "\n")
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return out
}

func ptrBool(b bool) *bool { return &b }
