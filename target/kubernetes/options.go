package kubernetes

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Kind is the name trial specs give this target (target.kind: kubernetes).
const Kind = "kubernetes"

// Runner modes: where the router, warm-up, driver and gate run.
const (
	// RunnerLocal runs them in autoinfer's own process, which must reach
	// the pod IPs (autoinfer runs inside the cluster network, e.g. as a Job).
	RunnerLocal = "local"
	// RunnerInCluster starts a runner pod from autoinfer's image
	// (runner_image) next to the workers; it runs the router, warm-up,
	// driver and gate, and its result is recorded in the local ledger.
	RunnerInCluster = "in-cluster"
)

// Defaults for Options' zero values.
const (
	DefaultPort           = 8000
	DefaultStartupTimeout = 15 * time.Minute // pulling a vLLM image and loading a large model
)

// Options are the kubernetes target's keys in a trial spec's target
// section.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster config of a pod.
	Kubeconfig string `yaml:"kubeconfig" json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `yaml:"context" json:"context,omitempty"`
	// Namespace is where the workers run; empty means a fresh namespace
	// per trial, labelled with the trial id and deleted after it.
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// Runner says where the router and driver run (RunnerLocal).
	Runner string `yaml:"runner" json:"runner,omitempty"`
	// RunnerImage is autoinfer's own image, for the in-cluster runner pod.
	RunnerImage string `yaml:"runner_image" json:"runner_image,omitempty"`
	// Image is the engine's container image.
	Image string `yaml:"image" json:"image,omitempty"`
	// ImagePullPolicy is Always, IfNotPresent or Never (empty: Kubernetes'
	// default for the tag).
	ImagePullPolicy string `yaml:"image_pull_policy" json:"image_pull_policy,omitempty"`
	// Command and Args are the container's, with placeholders {model}
	// {port} {engine_args} {role}; an element "{engine_args}" expands to
	// the topology's engine settings as flags.
	Command []string `yaml:"command" json:"command,omitempty"`
	Args    []string `yaml:"args" json:"args,omitempty"`
	// Port is the container port the engine listens on ({port}).
	Port int `yaml:"port" json:"port,omitempty"`
	// Env is the container's environment; values may use placeholders.
	// POD_IP is always set to the pod's IP (downward API) unless given.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Resources are the container's requests and limits by resource name
	// ("cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1").
	Resources Resources `yaml:"resources" json:"resources,omitzero,omitempty"`
	// NodeSelector restricts the nodes pods may run on.
	NodeSelector map[string]string `yaml:"node_selector" json:"node_selector,omitempty"`
	// Tolerations let pods run on tainted (e.g. GPU) nodes.
	Tolerations []Toleration `yaml:"tolerations" json:"tolerations,omitempty"`
	// ImagePullSecrets name Secrets in the namespace for private registries.
	ImagePullSecrets []string `yaml:"image_pull_secrets" json:"image_pull_secrets,omitempty"`
	// Volumes are mounted into the engine container (a model cache).
	Volumes []Volume `yaml:"volumes" json:"volumes,omitempty"`
	// StartupTimeout bounds provisioning: every pod scheduled, pulled,
	// started, Ready and answering.
	StartupTimeout time.Duration `yaml:"startup_timeout" json:"startup_timeout,omitempty"`
	// HealthPath is probed on every pod until it answers 200.
	HealthPath string `yaml:"health_path" json:"health_path,omitempty"`
	// Source optionally names a profile of the servers, or calibrates one
	// (calibrate: true), as the static target's does: each real-time
	// trial is then replayed on the virtual clock as its prediction.
	simtarget.Source `yaml:",inline"`
}

// Resources are a container's requests and limits.
type Resources struct {
	Requests map[string]string `yaml:"requests" json:"requests,omitempty"`
	Limits   map[string]string `yaml:"limits" json:"limits,omitempty"`
}

// Toleration is a pod toleration (Kubernetes' fields, snake_case).
type Toleration struct {
	Key      string `yaml:"key" json:"key,omitempty"`
	Operator string `yaml:"operator" json:"operator,omitempty"`
	Value    string `yaml:"value" json:"value,omitempty"`
	Effect   string `yaml:"effect" json:"effect,omitempty"`
}

// Volume is one volume and where the engine container mounts it; exactly
// one source (host_path, persistent_volume_claim, empty_dir) is set.
type Volume struct {
	Name                  string `yaml:"name" json:"name,omitempty"`
	MountPath             string `yaml:"mount_path" json:"mount_path,omitempty"`
	ReadOnly              bool   `yaml:"read_only" json:"read_only,omitempty"`
	HostPath              string `yaml:"host_path" json:"host_path,omitempty"`
	PersistentVolumeClaim string `yaml:"persistent_volume_claim" json:"persistent_volume_claim,omitempty"`
	EmptyDir              bool   `yaml:"empty_dir" json:"empty_dir,omitempty"`
}

var (
	_ target.Options          = (*Options)(nil)
	_ target.HardwareReporter = (*Options)(nil)
	_ target.ProfiledWorkers  = (*Options)(nil)
)

// Default fills in the runner, port, timeout and health path, and a
// calibration's budget.
func (o *Options) Default() {
	if o.Runner == "" {
		o.Runner = RunnerLocal
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.StartupTimeout == 0 {
		o.StartupTimeout = DefaultStartupTimeout
	}
	if o.HealthPath == "" {
		o.HealthPath = target.DefaultHealthPath
	}
	o.DefaultCalibration()
}

// WithProfileFile is a copy of o whose profile is the file at path (a
// calibration's): what the trial's virtual replay runs.
func (o *Options) WithProfileFile(path string) target.Options {
	c := *o
	c.Source = o.Calibrated(path)
	return &c
}

var _ target.HardwareReporter = (*Options)(nil)

// ReportsHardware reports true: the hardware identity comes from the nodes.
func (o *Options) ReportsHardware() bool { return true }

// Validate checks every key, and that the engine learns its port and the
// topology's engine settings.
func (o *Options) Validate(topo target.Topology) error {
	var l field.Errors
	switch o.Runner {
	case "", RunnerLocal:
		if o.RunnerImage != "" {
			l.Add("runner_image", "only for runner %s (runner is %s)", RunnerInCluster, RunnerLocal)
		}
	case RunnerInCluster:
		if o.RunnerImage == "" {
			l.Add("runner_image", "required for runner %s: autoinfer's own image, e.g. ghcr.io/autoinfer/autoinfer:v1", RunnerInCluster)
		}
	default:
		l.Add("runner", "must be %s or %s (got %q)", RunnerLocal, RunnerInCluster, o.Runner)
	}
	if o.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(o.Namespace) {
			l.Add("namespace", "%s (got %q)", msg, o.Namespace)
		}
	}
	if o.Image == "" {
		l.Add("image", "required for kind kubernetes, e.g. vllm/vllm-openai:v0.11.0")
	}
	if o.ImagePullPolicy != "" {
		l.Check(field.OneOf("image_pull_policy", o.ImagePullPolicy, "Always", "IfNotPresent", "Never"))
	}
	l.Check(o.validateCommand(topo))
	if o.Port != 0 {
		l.Check(field.Between("port", o.Port, 1, 65535))
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		if msgs := validation.IsEnvVarName(k); len(msgs) > 0 {
			l.Add("env."+k, "%s", strings.Join(msgs, "; "))
		}
		if err := checkWord(o.Env[k], false); err != nil {
			l.Add("env."+k, "%v", err)
		}
	}
	l.Check(o.Resources.validate()...)
	for _, k := range slices.Sorted(maps.Keys(o.NodeSelector)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			l.Add("node_selector."+k, "%s", strings.Join(msgs, "; "))
		}
	}
	for i, t := range o.Tolerations {
		l.Check(t.validate(fmt.Sprintf("tolerations[%d]", i))...)
	}
	for i, s := range o.ImagePullSecrets {
		if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
			l.Add(fmt.Sprintf("image_pull_secrets[%d]", i), "%s (got %q)", strings.Join(msgs, "; "), s)
		}
	}
	l.Check(validateVolumes(o.Volumes)...)
	if o.StartupTimeout < 0 {
		l.Add("startup_timeout", "must be a positive duration such as 10m")
	}
	if o.HealthPath != "" {
		l.Check(field.AbsPath("health_path", o.HealthPath))
	}
	if o.Calibrate && o.Runner == RunnerInCluster {
		// The probe runs in this process, which cannot reach the pods.
		l.Add("calibrate", "only with runner %s (runner is %s)", RunnerLocal, RunnerInCluster)
	}
	l.Nest("", o.Check(topo))
	return l.Err()
}

// validateCommand checks the placeholders and that port and engine
// settings reach the engine.
func (o *Options) validateCommand(topo target.Topology) error {
	if len(o.Command) == 0 && len(o.Args) == 0 {
		return field.Errorf("command", "required for kind kubernetes: the engine's command and args, e.g. [vllm, serve, \"{model}\", --port, \"{port}\", \"{engine_args}\"]")
	}
	var l field.Errors
	for key, ws := range map[string][]string{"command": o.Command, "args": o.Args} {
		for i, w := range ws {
			if err := checkWord(w, true); err != nil {
				l.Add(fmt.Sprintf("%s[%d]", key, i), "%v", err)
			}
		}
	}
	envs := slices.Collect(maps.Values(o.Env))
	if !uses("port", o.Command, o.Args, envs) {
		l.Add("args", "must pass {port} to the engine (the port pods listen on, %d by default)", DefaultPort)
	}
	if args := topo.Engine.Args(); len(args) > 0 && !uses("engine_args", o.Command, o.Args, envs) {
		l.Add("args", "has no {engine_args}, so topology.engine settings (%s) would be ignored", strings.Join(args, " "))
	}
	return l.Err()
}

func (r Resources) validate() []error {
	var errs []error
	for _, part := range []struct {
		key string
		m   map[string]string
	}{{"resources.requests", r.Requests}, {"resources.limits", r.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(part.m)) {
			path := part.key + "." + name
			q, err := resource.ParseQuantity(part.m[name])
			switch {
			case err != nil:
				errs = append(errs, field.Errorf(path, "not a quantity such as 8, 500m or 64Gi (got %q)", part.m[name]))
			case q.Sign() < 0:
				errs = append(errs, field.Errorf(path, "must not be negative (got %s)", part.m[name]))
			}
		}
	}
	// Kubernetes only accepts extended resources (nvidia.com/gpu) as
	// limits, with a request equal to the limit if any.
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		if !strings.Contains(name, "/") {
			continue
		}
		if lim, ok := r.Limits[name]; !ok || lim != r.Requests[name] {
			errs = append(errs, field.Errorf("resources.limits."+name, "must be set and equal to resources.requests.%s (Kubernetes does not overcommit extended resources)", name))
		}
	}
	return errs
}

func (t Toleration) validate(path string) []error {
	var errs []error
	if t.Operator != "" {
		errs = append(errs, field.OneOf(path+".operator", t.Operator, "Equal", "Exists"))
	}
	if t.Effect != "" {
		errs = append(errs, field.OneOf(path+".effect", t.Effect, "NoSchedule", "PreferNoSchedule", "NoExecute"))
	}
	if t.Operator == "Exists" && t.Value != "" {
		errs = append(errs, field.Errorf(path+".value", "must be empty with operator Exists"))
	}
	if t.Key == "" && t.Operator != "Exists" {
		errs = append(errs, field.Errorf(path+".key", "required unless operator is Exists"))
	}
	return errs
}

func validateVolumes(vs []Volume) []error {
	var errs []error
	seen := map[string]bool{}
	for i, v := range vs {
		path := fmt.Sprintf("volumes[%d]", i)
		if msgs := validation.IsDNS1123Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Errorf(path+".name", "%s (got %q)", strings.Join(msgs, "; "), v.Name))
		} else if seen[v.Name] {
			errs = append(errs, field.Errorf(path+".name", "%q is used twice", v.Name))
		}
		seen[v.Name] = true
		if !strings.HasPrefix(v.MountPath, "/") {
			errs = append(errs, field.Errorf(path+".mount_path", "must be an absolute path (got %q)", v.MountPath))
		}
		sources := 0
		for _, set := range []bool{v.HostPath != "", v.PersistentVolumeClaim != "", v.EmptyDir} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			errs = append(errs, field.Errorf(path, "needs exactly one of host_path, persistent_volume_claim, empty_dir (got %d)", sources))
		}
	}
	return errs
}

// Provisioner builds the kubernetes target; log reports progress.
func (o *Options) Provisioner(log *slog.Logger) (target.Provisioner, error) {
	opts := *o
	opts.Default()
	return New(opts, log)
}
