package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Leftover is one trial's objects in one namespace that Cleanup deleted.
type Leftover struct {
	Namespace string
	Trial     string
	// WithNamespace says the namespace itself was the trial's and went too.
	WithNamespace bool
}

func (l Leftover) String() string {
	if l.WithNamespace {
		return fmt.Sprintf("trial %s: namespace %s", l.Trial, l.Namespace)
	}
	return fmt.Sprintf("trial %s: its objects in namespace %s", l.Trial, l.Namespace)
}

// Cleanup deletes what killed runs left: every object carrying the trial
// label, in namespace only when it is given (and the namespace itself when
// a trial made it), else every labelled namespace and every labelled
// Deployment in the cluster. It waits until they are gone, bounded by ctx,
// and returns what it deleted.
func Cleanup(ctx context.Context, client *kubeclient.Clientset, namespace string) ([]Leftover, error) {
	left, err := leftovers(ctx, client, namespace)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, l := range left {
		errs = append(errs, deleteTrial(ctx, client, l.Namespace, l.Trial, l.WithNamespace))
	}
	return left, errors.Join(errs...)
}

// leftovers finds the labelled namespaces and Deployments.
func leftovers(ctx context.Context, client *kubeclient.Clientset, namespace string) ([]Leftover, error) {
	sel := metav1.ListOptions{LabelSelector: TrialLabel}
	var out []Leftover
	owned := map[string]bool{} // namespaces deleted whole
	if namespace == "" {
		nss, err := client.CoreV1().Namespaces().List(ctx, sel)
		if err != nil {
			return nil, fmt.Errorf("listing autoinfer namespaces: %w", err)
		}
		for _, ns := range nss.Items {
			out = append(out, Leftover{Namespace: ns.Name, Trial: ns.Labels[TrialLabel], WithNamespace: true})
			owned[ns.Name] = true
		}
	} else {
		ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case apierrors.IsForbidden(err):
			// A Role in the namespace cannot read the namespace object;
			// the Deployments below are what it may delete.
		case err != nil:
			return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
		case ns.Labels[TrialLabel] != "":
			return []Leftover{{Namespace: namespace, Trial: ns.Labels[TrialLabel], WithNamespace: true}}, nil
		}
	}
	deps, err := client.AppsV1().Deployments(namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing autoinfer deployments: %w", err)
	}
	for _, d := range deps.Items {
		l := Leftover{Namespace: d.Namespace, Trial: d.Labels[TrialLabel]}
		if !owned[d.Namespace] && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	// Runner pods outlive nothing they own, so they are found by themselves.
	pods, err := client.CoreV1().Pods(namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing autoinfer pods: %w", err)
	}
	for _, p := range pods.Items {
		l := Leftover{Namespace: p.Namespace, Trial: p.Labels[TrialLabel]}
		if !owned[p.Namespace] && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}
