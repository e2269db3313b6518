package trials

import (
	"os/exec"
	"strings"
	"testing"
)

// The spec model depends on no target or router implementation and not on
// the Prometheus client: kinds come from a registry, the router config from
// its leaf package (docs/architecture.md).
func TestSpecModelDependsOnNoImplementation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"github.com/autoinfer/autoinfer/router", "github.com/autoinfer/autoinfer/target/sim",
		"github.com/autoinfer/autoinfer/target/simtarget", "github.com/autoinfer/autoinfer/target/static",
		"github.com/autoinfer/autoinfer/target/process", "github.com/autoinfer/autoinfer/target/kubernetes",
		"k8s.io/client-go/rest", "github.com/autoinfer/autoinfer/adapter",
		"github.com/prometheus/client_golang/prometheus",
		// the driver's runtime: the spec model needs only the workload's
		// and arrival's types (workload.LongestRequest included)
		"github.com/autoinfer/autoinfer/driver", "github.com/autoinfer/autoinfer/driver/sweep",
		"github.com/autoinfer/autoinfer/driver/metrics", "github.com/autoinfer/autoinfer/ledger",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f {
				t.Errorf("trials depends on %s", dep)
			}
		}
	}
}
