// Package kubeclient is the slice of the Kubernetes API the kubernetes
// target speaks: typed clients for the core/v1 and apps/v1 resources it
// creates, lists, watches and deletes, built on client-go's generic typed
// client (gentype) over one rest.Config.
//
// Why not client-go's kubernetes.Clientset: its typed clients register
// every API group in one scheme (k8s.io/client-go/kubernetes/scheme), so
// linking even one of them compiles every group's types, and the
// clientset plus the informer factory add every group's client, apply
// configurations, informers and listers: 420 k8s.io packages in the CLI,
// compiled again under -race for every test binary that links it. Each
// Group here holds a scheme with only the groups given to it, so the CLI
// links core/v1 and apps/v1 alone. The requests are the ones client-go's
// generated clients send (same paths, parameters, protobuf preference,
// shared HTTP client and rate limiter).
package kubeclient
