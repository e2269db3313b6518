package target

import "context"

// Hardware is what a deployment's workers ran on, as the target found it
// (the kubernetes target reads it from the nodes' labels). It identifies
// the row's hardware for the comparison rules.
type Hardware struct {
	// Label names the hardware on the row, e.g. 1xNVIDIA-H100-80GB-HBM3
	// (GPUs per worker x GPU product).
	Label string
	// Config is what identifies the hardware, hashed for comparisons: the
	// GPU product and GPUs per worker; JSON-encodable.
	Config any
	// Nodes are the nodes the workers ran on, for reports; they do not
	// change the identity (the same GPUs on other nodes compare).
	Nodes []string
}

// RemoteRunner runs autoinfer itself next to the workers, where their
// addresses are reachable: the kubernetes target starts a runner pod from
// autoinfer's image. payload is handed to `autoinfer trial runner`, and its
// result line comes back.
type RemoteRunner interface {
	RunRemote(ctx context.Context, payload []byte) (result []byte, err error)
}
