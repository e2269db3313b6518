package kubeclient

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clientset holds the core/v1 and apps/v1 clients, shaped like client-go's
// (CoreV1().Pods(ns), AppsV1().Deployments(ns)) with only the resources
// the target uses.
type Clientset struct {
	core, apps *Group
}

// NewForConfig builds the clients on one HTTP client and, as
// kubernetes.NewForConfig does, one rate limiter shared by both groups
// when cfg sets QPS.
func NewForConfig(cfg *rest.Config) (*Clientset, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("kubernetes client: burst must be > 0 when qps is set, got %d", c.Burst)
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	httpClient, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("building the kubernetes http client: %w", err)
	}
	core, err := NewGroup(&c, httpClient, corev1.SchemeGroupVersion, corev1.AddToScheme)
	if err != nil {
		return nil, err
	}
	apps, err := NewGroup(&c, httpClient, appsv1.SchemeGroupVersion, appsv1.AddToScheme)
	if err != nil {
		return nil, err
	}
	return &Clientset{core: core, apps: apps}, nil
}

// CoreV1 is the core/v1 group.
func (c *Clientset) CoreV1() CoreV1 { return CoreV1{c.core} }

// AppsV1 is the apps/v1 group.
func (c *Clientset) AppsV1() AppsV1 { return AppsV1{c.apps} }

// CoreV1 is the core/v1 clients.
type CoreV1 struct{ g *Group }

// Namespaces is the client of namespaces.
func (c CoreV1) Namespaces() *gentype.ClientWithList[*corev1.Namespace, *corev1.NamespaceList] {
	return Resource[*corev1.Namespace, *corev1.NamespaceList](c.g, "namespaces", "")
}

// Nodes is the client of nodes.
func (c CoreV1) Nodes() *gentype.ClientWithList[*corev1.Node, *corev1.NodeList] {
	return Resource[*corev1.Node, *corev1.NodeList](c.g, "nodes", "")
}

// Pods is the client of the pods in namespace ("" for every namespace).
func (c CoreV1) Pods(namespace string) Pods {
	return Pods{Resource[*corev1.Pod, *corev1.PodList](c.g, "pods", namespace), c.g, namespace}
}

// Pods is the pods client with the log subresource.
type Pods struct {
	*gentype.ClientWithList[*corev1.Pod, *corev1.PodList]
	g         *Group
	namespace string
}

// GetLogs is the request for a pod's container log.
func (p Pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.g.REST().Get().Namespace(p.namespace).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, p.g.ParameterCodec())
}

// AppsV1 is the apps/v1 clients.
type AppsV1 struct{ g *Group }

// Deployments is the client of the Deployments in namespace ("" for
// every namespace).
func (c AppsV1) Deployments(namespace string) *gentype.ClientWithList[*appsv1.Deployment, *appsv1.DeploymentList] {
	return Resource[*appsv1.Deployment, *appsv1.DeploymentList](c.g, "deployments", namespace)
}
