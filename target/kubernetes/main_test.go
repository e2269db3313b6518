package kubernetes_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/autoinfer/autoinfer/cmd/clitest"
	"github.com/autoinfer/autoinfer/target/kubernetes/k8stest"
)

// env is the package's one control plane and test kubelet (k8stest.Env).
var env k8stest.Env

// autoinferBin is the autoinfer binary TestMain builds: the test kubelet
// runs it for the image testImage, and the cleanup test runs it as a CLI.
var autoinferBin string

// The node the test kubelet registers: GPUs of one product, enough for
// every test's engine pods at once (the tests run in parallel, one GPU
// per pod).
const (
	testImage  = "autoinfer:test"
	testGPU    = "NVIDIA-H100-80GB-HBM3"
	testGPUs   = 32
	testNode   = "gpu-node-1"
	testModel  = "sim-m"
	sysNS      = "autoinfer-system"
	targetSA   = "autoinfer-target"
	buildError = "building autoinfer for the test kubelet"
)

func TestMain(m *testing.M) {
	os.Exit(env.Main(m, func(dir string) (k8stest.KubeletOptions, error) {
		bin, err := clitest.Build(dir)
		if err != nil {
			return k8stest.KubeletOptions{}, fmt.Errorf("%s: %w", buildError, err)
		}
		autoinferBin = bin
		return k8stest.KubeletOptions{
			Node: testNode, GPUs: testGPUs, GPUProduct: testGPU,
			Images: map[string]string{testImage: autoinferBin},
		}, nil
	}))
}
