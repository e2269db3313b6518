package kubernetes

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoinfer/autoinfer/target"
)

// Labels every object a trial creates carries. TrialLabel's value is the
// trial id; cleanup selects on it.
const (
	TrialLabel     = "autoinfer.io/trial"
	RoleLabel      = "autoinfer.io/role"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "autoinfer"
	containerName  = "engine"
)

// labels are a trial's labels, with the role for a role's objects.
func labels(trial string, role target.Role) map[string]string {
	l := map[string]string{TrialLabel: trial, ManagedByLabel: managedBy}
	if role != "" {
		l[RoleLabel] = string(role)
	}
	return l
}

// namespaceObject is a trial's fresh namespace.
func namespaceObject(name, trial string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(trial, "")}}
}

// deploymentObject is one role's Deployment: replicas pods of the engine
// template, labelled with the trial and the role. Options are defaulted
// and valid.
func (o *Options) deploymentObject(name, trial string, role target.Role, replicas int, v vars) *appsv1.Deployment {
	l := labels(trial, role)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{TrialLabel: trial, RoleLabel: string(role)}},
			// A failed pod is a failed trial, not something to roll past.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       o.podSpec(v),
			},
		},
	}
}

func (o *Options) podSpec(v vars) corev1.PodSpec {
	spec := corev1.PodSpec{
		Containers:                    []corev1.Container{o.container(v)},
		NodeSelector:                  o.NodeSelector,
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](30),
	}
	for _, t := range o.Tolerations {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect),
		})
	}
	for _, s := range o.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	for _, vol := range o.Volumes {
		src := corev1.VolumeSource{}
		switch {
		case vol.HostPath != "":
			src.HostPath = &corev1.HostPathVolumeSource{Path: vol.HostPath}
		case vol.PersistentVolumeClaim != "":
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vol.PersistentVolumeClaim, ReadOnly: vol.ReadOnly}
		default:
			src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: vol.Name, VolumeSource: src})
	}
	return spec
}

func (o *Options) container(v vars) corev1.Container {
	c := corev1.Container{
		Name:            containerName,
		Image:           o.Image,
		ImagePullPolicy: corev1.PullPolicy(o.ImagePullPolicy),
		Command:         words(v, o.Command),
		Args:            words(v, o.Args),
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: int32(o.Port), Protocol: corev1.ProtocolTCP}},
		// The last log lines of a failed container reach its status, so
		// a crash is reported with its cause without reading logs.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources: corev1.ResourceRequirements{
			Requests: quantities(o.Resources.Requests),
			Limits:   quantities(o.Resources.Limits),
		},
	}
	if _, ok := o.Env["POD_IP"]; !ok {
		c.Env = append(c.Env, corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
		}})
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: v.Expand(o.Env[k])})
	}
	for _, vol := range o.Volumes {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol.Name, MountPath: vol.MountPath, ReadOnly: vol.ReadOnly})
	}
	return c
}

// quantities parses validated quantities.
func quantities(m map[string]string) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}
