// Package k8stest runs a real Kubernetes control plane for tests: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler as child
// processes of the test binary on free loopback ports, plus a test-side
// kubelet (Kubelet) that registers a GPU node and runs each Pod bound to it
// as a local process, because there is no container runtime.
//
// The binaries are built once from the Go module proxy by build.sh (`make
// k8s-binaries`, a prerequisite of `make unit`) into BinDir. When they are
// absent the tests that need them skip with a message saying how to build
// them.
//
// One control plane per test package: TestMain starts it (Main) and every
// test takes it with Env.Cluster, working in its own namespace.
package k8stest
