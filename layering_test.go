package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayeringHoldsTransitively checks docs/architecture.md's dependency
// directions on everything each package links (go list -deps), not only
// on what it imports itself as golangci-lint's depguard does: a direction
// broken through an intermediate package fails here.
func TestLayeringHoldsTransitively(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const m = "github.com/autoinfer/autoinfer/"
	for _, c := range []struct {
		pkg string
		// deny are package path prefixes the package must not link;
		// allow are longer prefixes under them that it may.
		deny, allow []string
	}{
		{"./trials", []string{m + "router", m + "target/sim", m + "target/static", m + "target/process", m + "target/kubernetes",
			m + "adapter", m + "ledger", m + "driver", m + "cmd", "k8s.io/client-go", "github.com/prometheus/client_golang"},
			[]string{m + "router/routerconfig", m + "router/policy", m + "ledger/metric", m + "driver/workload", m + "driver/arrival"}},
		{"./router/...", []string{m + "driver", m + "adapter", m + "ledger", m + "trials", m + "target/sim", m + "target/static",
			m + "target/process", m + "target/kubernetes", m + "cmd"}, []string{m + "trials/field"}},
		{"./driver/...", []string{m + "router", m + "adapter", m + "ledger", m + "trials", m + "target", m + "cmd"},
			[]string{m + "target/tokenizer", m + "trials/field"}},
		{"./target/...", []string{m + "router", m + "driver", m + "adapter", m + "ledger", m + "trials", m + "cmd"},
			[]string{m + "trials/field"}},
		{"./ledger/...", []string{m + "router", m + "adapter", m + "target", m + "trials", m + "driver", m + "cmd"},
			[]string{m + "driver/metrics"}},
		{"./trials/field", []string{m}, nil},
		{"./ledger/metric", []string{m}, nil},
	} {
		out, err := exec.Command("go", "list", "-deps", c.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", c.pkg, err)
		}
		own := strings.TrimPrefix(strings.TrimSuffix(c.pkg, "/..."), "./")
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, m+own) {
				continue // the package itself and its own sub-packages
			}
			if d := longestPrefix(dep, c.deny); d > 0 && d >= longestPrefix(dep, c.allow) {
				t.Errorf("%s links %s", c.pkg, dep)
			}
		}
	}
}

// longestPrefix is the length of the longest of prefixes that p starts
// with as a path (equal, or followed by "/"); 0 when none.
func longestPrefix(p string, prefixes []string) int {
	best := 0
	for _, x := range prefixes {
		if (p == x || strings.HasPrefix(p, strings.TrimSuffix(x, "/")+"/")) && len(x) > best {
			best = len(x)
		}
	}
	return best
}
