package kubeclient

import (
	"os/exec"
	"strings"
	"testing"
)

// The target links only the API groups it uses (see doc.go): none of
// client-go's all-groups packages may come back through it.
func TestTargetLinksNoAllGroupsPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/autoinfer/autoinfer/target/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go/kubernetes", // the clientset, its scheme and typed clients
		"k8s.io/client-go/informers",
		"k8s.io/client-go/applyconfigurations",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("target/kubernetes depends on %s", dep)
			}
		}
	}
}
