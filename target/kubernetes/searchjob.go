package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/gentype"
	"k8s.io/utils/ptr"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	"github.com/autoinfer/autoinfer/trials/field"
)

// SearchOptions say how a search spreads over a cluster (autoinfer search
// --kubernetes; a search spec's search.kubernetes block): which image runs
// autoinfer, how many pods evaluate candidates at once, what each asks
// for. The cluster comes from the kubeconfig as for the target.
type SearchOptions struct {
	Kubeconfig string `yaml:"kubeconfig" json:"kubeconfig,omitempty"`
	Context    string `yaml:"context" json:"context,omitempty"`
	// Image is autoinfer's own image; Command its entrypoint (default
	// ["autoinfer"]), to which the worker's subcommand is appended.
	Image           string   `yaml:"image" json:"image"`
	ImagePullPolicy string   `yaml:"image_pull_policy" json:"image_pull_policy,omitempty"`
	Command         []string `yaml:"command" json:"command,omitempty"`
	// Pods is the Job's parallelism: how many pods each round's candidates
	// are split over (default 4).
	Pods         int               `yaml:"pods" json:"pods,omitempty"`
	Resources    Resources         `yaml:"resources" json:"resources,omitzero"`
	NodeSelector map[string]string `yaml:"node_selector" json:"node_selector,omitempty"`
}

// DefaultSearchPods is SearchOptions.Pods' default.
const DefaultSearchPods = 4

// Validate checks the options, naming each bad key under prefix.
func (o SearchOptions) Validate(prefix string) error {
	var l field.Errors
	if o.Image == "" {
		l.Add(prefix+".image", "required: autoinfer's own image, e.g. ghcr.io/autoinfer/autoinfer:v1")
	}
	if o.ImagePullPolicy != "" {
		l.Check(field.OneOf(prefix+".image_pull_policy", o.ImagePullPolicy, "Always", "IfNotPresent", "Never"))
	}
	if o.Pods < 0 || o.Pods > 1000 {
		l.Add(prefix+".pods", "must be between 1 and 1000 (got %d)", o.Pods)
	}
	for _, err := range o.Resources.validate() {
		l.Nest(prefix, err)
	}
	return l.Err()
}

// SearchJob is a search's footprint on a cluster: a fresh namespace
// labelled with the search's id, so that `autoinfer target cleanup
// --kubernetes` removes what a killed search left; a Secret holding the
// ledger location the pods write to (credentials never appear in a pod
// spec); and one Indexed Job per batch of candidates.
type SearchJob struct {
	o         SearchOptions
	client    *kubeclient.Clientset
	batch     *kubeclient.Group
	core      *kubeclient.Group
	namespace string
	id        string
	jobs      int
}

// searchSecret holds the ledger location under key ledgerKey.
const (
	searchSecret = "autoinfer-ledger"
	ledgerKey    = "ledger"
	// LedgerEnv is the environment variable the pods read the ledger
	// location from (the CLI's --ledger default).
	LedgerEnv = "AUTOINFER_LEDGER"
)

// StartSearchJob creates the search's namespace (named after id, a
// search id) and the ledger Secret.
func StartSearchJob(ctx context.Context, o SearchOptions, id, ledger string) (*SearchJob, error) {
	cfg, err := restConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	client, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	batch, err := kubeclient.NewGroup(cfg, nil, batchv1.SchemeGroupVersion, batchv1.AddToScheme)
	if err != nil {
		return nil, err
	}
	core, err := kubeclient.NewGroup(cfg, nil, corev1.SchemeGroupVersion, corev1.AddToScheme)
	if err != nil {
		return nil, err
	}
	trial := "search-" + strings.ToLower(id)
	if msgs := validation.IsDNS1123Label(trial); len(msgs) > 0 {
		return nil, fmt.Errorf("search id %q: %s", id, strings.Join(msgs, "; "))
	}
	j := &SearchJob{o: o, client: client, batch: batch, core: core, namespace: trial, id: trial}
	if j.o.Pods == 0 {
		j.o.Pods = DefaultSearchPods
	}
	if len(j.o.Command) == 0 {
		j.o.Command = []string{"autoinfer"}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespaceObject(j.namespace, trial), metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("%w (a run of this search is going on, or was killed: autoinfer target cleanup --kubernetes removes what it left)", err)
		}
		return nil, fmt.Errorf("creating namespace %s: %w", j.namespace, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: searchSecret, Labels: labels(trial, "")},
		Data: map[string][]byte{ledgerKey: []byte(ledger)}}
	if _, err := j.secrets().Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return j, errors.Join(fmt.Errorf("creating the ledger secret: %w", err), j.Close(context.WithoutCancel(ctx)))
	}
	return j, nil
}

// Namespace is where the search's objects live.
func (j *SearchJob) Namespace() string { return j.namespace }

func (j *SearchJob) secrets() *gentype.ClientWithList[*corev1.Secret, *corev1.SecretList] {
	return kubeclient.Resource[*corev1.Secret, *corev1.SecretList](j.core, "secrets", j.namespace)
}

func (j *SearchJob) jobsClient() *gentype.ClientWithList[*batchv1.Job, *batchv1.JobList] {
	return kubeclient.Resource[*batchv1.Job, *batchv1.JobList](j.batch, "jobs", j.namespace)
}

// Run runs args (after the image's command) in an Indexed Job of pods
// pods (at most the options' Pods), each with env and the ledger location
// in LedgerEnv and its index in JOB_COMPLETION_INDEX, and returns once
// every pod succeeded, or with the first failure and the end of its log.
// The Job is deleted either way.
func (j *SearchJob) Run(ctx context.Context, pods int, args []string, env map[string]string) error {
	pods = max(1, min(pods, j.o.Pods))
	j.jobs++
	name := fmt.Sprintf("search-%d", j.jobs)
	job := j.jobObject(name, pods, args, env)
	if _, err := j.jobsClient().Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating job %s/%s: %w", j.namespace, name, err)
	}
	err := j.wait(ctx, name)
	fg := metav1.DeletePropagationForeground
	if derr := j.jobsClient().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{PropagationPolicy: &fg}); derr != nil && err == nil {
		err = fmt.Errorf("deleting job %s/%s: %w", j.namespace, name, derr)
	}
	return err
}

func (j *SearchJob) jobObject(name string, pods int, args []string, env map[string]string) *batchv1.Job {
	l := labels(j.id, "")
	c := corev1.Container{
		Name: "search", Image: j.o.Image, ImagePullPolicy: corev1.PullPolicy(j.o.ImagePullPolicy),
		Command:   append(slices.Clone(j.o.Command), args...),
		Resources: corev1.ResourceRequirements{Requests: quantities(j.o.Resources.Requests), Limits: quantities(j.o.Resources.Limits)},
		Env: []corev1.EnvVar{{Name: LedgerEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: searchSecret}, Key: ledgerKey}}}},
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: env[k]})
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec: batchv1.JobSpec{
			Completions: ptr.To(int32(pods)), Parallelism: ptr.To(int32(pods)),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			// A shard that fails fails the search: candidates are
			// deterministic, so a retry would fail the same way.
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector: j.o.NodeSelector, AutomountServiceAccountToken: ptr.To(false),
				},
			},
		},
	}
}

// wait watches the Job until it is Complete or Failed.
func (j *SearchJob) wait(ctx context.Context, name string) error {
	for {
		w, err := j.jobsClient().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return fmt.Errorf("watching job %s/%s: %w", j.namespace, name, err)
		}
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok {
				continue
			}
			for _, c := range job.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					continue
				}
				switch c.Type {
				case batchv1.JobComplete:
					w.Stop()
					return nil
				case batchv1.JobFailed:
					w.Stop()
					return fmt.Errorf("job %s/%s failed: %s: %s%s", j.namespace, name, c.Reason, c.Message, j.failedLog(ctx, name))
				}
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// failedLog is the end of a failed pod's log, to say why.
func (j *SearchJob) failedLog(ctx context.Context, job string) string {
	pods, err := j.client.CoreV1().Pods(j.namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		out, err := j.client.CoreV1().Pods(j.namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](20)}).DoRaw(ctx)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("\npod %s:\n%s", p.Name, bytes.TrimSpace(out))
	}
	return ""
}

// Close deletes the namespace with everything in it and waits until it
// is gone.
func (j *SearchJob) Close(ctx context.Context) error {
	return deleteTrial(ctx, j.client, j.namespace, j.id, true)
}
