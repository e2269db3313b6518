package kubernetes

import (
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/trials/field"
)

func validOptions() Options {
	o := Options{
		Image:     "vllm/vllm-openai:v0.11.0",
		Command:   []string{"vllm", "serve", "{model}"},
		Args:      []string{"--port", "{port}", "{engine_args}"},
		Resources: Resources{Limits: map[string]string{"nvidia.com/gpu": "1"}},
	}
	o.Default()
	return o
}

var topo = target.Topology{Replicas: 2, Engine: engine.Config{Model: "m", MaxNumSeqs: 64}}

func TestValidateNamesEveryField(t *testing.T) {
	if err := (&Options{}).Validate(topo); err == nil {
		t.Fatal("empty options validated")
	}
	good := validOptions()
	if err := good.Validate(topo); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	bad := validOptions()
	bad.Runner = "elsewhere"
	bad.Namespace = "Bad_NS"
	bad.ImagePullPolicy = "Sometimes"
	bad.Args = []string{"--port", "{prot}", "--x={engine_args}"}
	bad.Port = 70000
	bad.Env = map[string]string{"1BAD": "x", "OK": "{rank}"}
	bad.Resources = Resources{Requests: map[string]string{"cpu": "lots", "nvidia.com/gpu": "2"}, Limits: map[string]string{"memory": "-1Gi"}}
	bad.NodeSelector = map[string]string{"bad key!": "x"}
	bad.Tolerations = []Toleration{{Operator: "Maybe", Effect: "Never"}}
	bad.ImagePullSecrets = []string{"Not_A_Name"}
	bad.Volumes = []Volume{{Name: "cache", MountPath: "rel", HostPath: "/a", EmptyDir: true}, {Name: "cache", MountPath: "/b"}}
	bad.StartupTimeout = -1
	bad.HealthPath = "health"
	var paths []string
	for _, e := range field.Flatten(bad.Validate(topo)) {
		fe, ok := e.(*field.Error)
		if !ok {
			t.Fatalf("problem %v is not a *field.Error", e)
		}
		paths = append(paths, fe.Path)
	}
	inCluster := validOptions()
	inCluster.Runner = RunnerInCluster
	if err := inCluster.Validate(topo); err == nil || !strings.Contains(err.Error(), "runner_image") {
		t.Errorf("in-cluster without runner_image: %v", err)
	}
	for _, want := range []string{
		"runner", "namespace", "image_pull_policy", "args[1]", "args[2]", "args", "port", "env.1BAD", "env.OK",
		"resources.requests.cpu", "resources.limits.memory", "resources.limits.nvidia.com/gpu", "node_selector.bad key!",
		"tolerations[0].operator", "tolerations[0].effect", "tolerations[0].key", "image_pull_secrets[0]",
		"volumes[0].mount_path", "volumes[0]", "volumes[1].name", "volumes[1]", "startup_timeout", "health_path",
	} {
		if !slices.Contains(paths, want) {
			t.Errorf("no problem reported at %s (got %v)", want, paths)
		}
	}
}

// The engine settings become the container's arguments, each role gets
// its own labelled Deployment, and the pod knows its IP.
func TestDeploymentObject(t *testing.T) {
	o := validOptions()
	o.Env = map[string]string{"ROLE": "{role}"}
	o.Volumes = []Volume{{Name: "cache", MountPath: "/root/.cache/huggingface", PersistentVolumeClaim: "hf-cache"}}
	v := vars{Model: "m", Port: o.Port, EngineArgs: topo.Engine.Args(), Role: target.Prefill}
	d := o.deploymentObject("autoinfer-x-prefill", "x", target.Prefill, 3, v)
	c := d.Spec.Template.Spec.Containers[0]
	if got := strings.Join(append(c.Command, c.Args...), " "); got != "vllm serve m --port 8000 "+strings.Join(topo.Engine.Args(), " ") {
		t.Errorf("argv %q", got)
	}
	if *d.Spec.Replicas != 3 || d.Labels[TrialLabel] != "x" || d.Spec.Template.Labels[RoleLabel] != "prefill" || d.Spec.Selector.MatchLabels[RoleLabel] != "prefill" {
		t.Errorf("deployment %s: replicas %d labels %v template %v", d.Name, *d.Spec.Replicas, d.Labels, d.Spec.Template.Labels)
	}
	if len(c.Env) != 2 || c.Env[0].Name != "POD_IP" || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" || c.Env[1].Value != "prefill" {
		t.Errorf("env %+v", c.Env)
	}
	if q := c.Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("gpu limit %v", q)
	}
	vol := d.Spec.Template.Spec.Volumes
	if len(vol) != 1 || vol[0].PersistentVolumeClaim == nil || vol[0].PersistentVolumeClaim.ClaimName != "hf-cache" || c.VolumeMounts[0].MountPath != "/root/.cache/huggingface" {
		t.Errorf("volumes %+v mounts %+v", vol, c.VolumeMounts)
	}
}
