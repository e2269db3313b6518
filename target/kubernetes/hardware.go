package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoinfer/autoinfer/target"
)

// GPUProductLabel is the node label NVIDIA's GPU feature discovery sets
// to the GPU model (e.g. NVIDIA-H100-80GB-HBM3).
const GPUProductLabel = "nvidia.com/gpu.product"

// gpuResource is the extended resource GPUs are requested by.
const gpuResource = "nvidia.com/gpu"

// hardwareConfig identifies the hardware on the row (hashed).
type hardwareConfig struct {
	GPUProduct    string `json:"gpu_product"`
	GPUsPerWorker int64  `json:"gpus_per_worker"`
}

// hardware reads the GPU product of the nodes the workers run on and the
// GPUs each pod asked for. Workers on nodes with different products make
// one label of all of them ("A+B"); nodes without the label read
// "unlabelled".
func hardware(ctx context.Context, client *kubeclient.Clientset, opts Options, ready []readyPod) (*target.Hardware, error) {
	var nodes, products []string
	for _, r := range ready {
		if slices.Contains(nodes, r.node) {
			continue
		}
		nodes = append(nodes, r.node)
		n, err := client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading node %s for the hardware identity: %w", r.node, asForbidden(err, "get", "nodes", ""))
		}
		p := n.Labels[GPUProductLabel]
		if p == "" {
			p = "unlabelled"
		}
		if !slices.Contains(products, p) {
			products = append(products, p)
		}
	}
	slices.Sort(nodes)
	slices.Sort(products)
	var gpus int64
	if q, ok := quantities(opts.Resources.Limits)[gpuResource]; ok {
		gpus = q.Value()
	}
	cfg := hardwareConfig{GPUProduct: strings.Join(products, "+"), GPUsPerWorker: gpus}
	return &target.Hardware{Label: fmt.Sprintf("%dx%s", gpus, cfg.GPUProduct), Config: cfg, Nodes: nodes}, nil
}
