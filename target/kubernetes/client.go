package kubernetes

import (
	"fmt"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client builds the target's client from a kubeconfig path and context: empty
// path means $KUBECONFIG, then ~/.kube/config, then the in-cluster config
// when autoinfer runs in a pod; empty context means the current one.
func Client(kubeconfig, context string) (*kubeclient.Clientset, error) {
	cfg, err := restConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	cs, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building kubernetes client: %w", err)
	}
	return cs, nil
}

// restConfig loads the cluster's address and credentials as Client
// describes.
func restConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	// Provisioning lists and watches a handful of objects; the default
	// 5 requests/s would throttle teardown of a large deployment.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
