package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoinfer/autoinfer/target"
)

// Provisioner runs workers as Deployments on a cluster.
type Provisioner struct {
	opts   Options
	client *kubeclient.Clientset
	log    *slog.Logger
}

var _ target.Provisioner = (*Provisioner)(nil)

// New connects to the cluster the options name; opts must be defaulted
// and valid. log reports progress (nil discards).
func New(opts Options, log *slog.Logger) (*Provisioner, error) {
	client, err := Client(opts.Kubeconfig, opts.Context)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return NewWithClient(opts, client, log), nil
}

// NewWithClient is New with a client built elsewhere.
func NewWithClient(opts Options, client *kubeclient.Clientset, log *slog.Logger) *Provisioner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provisioner{opts: opts, client: client, log: log}
}

// trialID names one provisioning: a time stamp and randomness, short
// enough for object names.
func trialID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%s", time.Now().UTC().Format("0102-150405"), hex.EncodeToString(b))
}

// Provision creates the namespace (unless given) and one Deployment per
// role, then waits until every pod answers (see wait). On any failure
// everything created is deleted before returning.
func (p *Provisioner) Provision(ctx context.Context, topo target.Topology) (*target.Deployment, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	d := &deployment{client: p.client, trial: trialID(), namespace: p.opts.Namespace, log: p.log}
	d.log = p.log.With("trial", d.trial)
	if err := p.create(ctx, d, topo); err != nil {
		return nil, errors.Join(err, d.teardownAfterFailure(ctx))
	}
	wctx, cancel := context.WithTimeout(ctx, p.opts.StartupTimeout)
	defer cancel()
	workers, err := d.wait(wctx, p.opts, topo)
	if err == nil {
		if d.hardware, err = hardware(ctx, p.client, p.opts, workers); err != nil {
			// Without the nodes the row has no hardware identity: the
			// trial cannot be recorded for what it ran on.
			err = &target.StartupError{Worker: workers[0].worker, Reason: err.Error(), Err: err}
		}
	}
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			err = d.timeout(p.opts, err)
		}
		return nil, errors.Join(err, d.teardownAfterFailure(ctx))
	}
	return d.deployment(workers, p.opts), nil
}

// failedTeardownTimeout bounds the teardown after a failed provisioning,
// which must run also when ctx (Ctrl-C) is what failed.
const failedTeardownTimeout = time.Minute

func (d *deployment) teardownAfterFailure(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failedTeardownTimeout)
	defer cancel()
	return d.teardown(tctx)
}

// create makes the namespace and the Deployments.
func (p *Provisioner) create(ctx context.Context, d *deployment, topo target.Topology) error {
	if d.namespace == "" {
		d.namespace = "autoinfer-" + d.trial
		if _, err := p.client.CoreV1().Namespaces().Create(ctx, namespaceObject(d.namespace, d.trial), metav1.CreateOptions{}); err != nil {
			return createRefused(err, "namespaces", "", "namespace "+d.namespace, target.Collocated)
		}
		d.ownsNamespace = true
		d.log.Info("kubernetes: namespace created", "namespace", d.namespace)
	}
	roles := []struct {
		role target.Role
		n    int
	}{{target.Collocated, topo.Replicas}, {target.Prefill, topo.Prefill}, {target.Decode, topo.Decode}}
	for _, r := range roles {
		if r.n == 0 {
			continue
		}
		name := fmt.Sprintf("autoinfer-%s-%s", d.trial, r.role)
		v := vars{Model: topo.Engine.Model, Port: p.opts.Port, EngineArgs: topo.Engine.Args(), Role: r.role}
		obj := p.opts.deploymentObject(name, d.trial, r.role, r.n, v)
		if _, err := p.client.AppsV1().Deployments(d.namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return createRefused(err, "deployments", d.namespace, "deployment "+d.namespace+"/"+name, r.role)
		}
		d.deployments = append(d.deployments, name)
		d.roles = append(d.roles, roleCount{role: r.role, n: r.n})
		d.log.Info("kubernetes: deployment created", "deployment", d.namespace+"/"+name, "replicas", r.n, "image", p.opts.Image)
	}
	return nil
}

// createRefused is a create the API refused, as a StartupError of role:
// a *Forbidden when a permission is missing, else a *Refused (a quota, an
// admission webhook, a policy).
func createRefused(err error, resource, namespace, object string, role target.Role) error {
	var cause error = &Refused{Object: object, Message: err.Error()}
	if f, ok := asForbidden(err, "create", resource, namespace).(*Forbidden); ok {
		cause = f
	}
	return &target.StartupError{Worker: target.Worker{Role: role}, Reason: cause.Error(), Err: cause}
}

// roleCount is how many pods a role asks for.
type roleCount struct {
	role target.Role
	n    int
}

// podKey names a pod in errors and on workers.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
