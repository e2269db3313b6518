package adapter

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/trials"
)

// buildAutoinfer builds this repository's binary for tests that run it as a
// child process (a cached build only links).
func buildAutoinfer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the autoinfer binary")
	}
	bin := filepath.Join(t.TempDir(), "autoinfer")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/autoinfer/autoinfer").CombinedOutput()
	if err != nil {
		t.Fatalf("building autoinfer: %v\n%s", err, out)
	}
	return bin
}

// Acceptance 9: a process target that launches `autoinfer sim serve`
// workers passes the same trial as the in-process sim target, with the same
// request stream and the same tokens.
func TestProcessTargetMatchesSimTarget(t *testing.T) {
	bin := buildAutoinfer(t)
	r, _ := newTestRunner(t)
	simSpec := fmt.Sprintf(tinySpec, "round_robin")
	procSpec := strings.Replace(simSpec, "target: {kind: sim, profile: fast}", fmt.Sprintf(`target:
  kind: process
  command: "'%s' sim serve --host {host} --port {port} --model {model} --profile fast {engine_args}"
  startup_timeout: 30s
  stop_grace_period: 5s
  log_dir: %s`, bin, t.TempDir()), 1)
	procSpec = strings.Replace(procSpec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	simSpec = strings.Replace(simSpec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	a := runOK(t, r, parseSpec(t, simSpec)[0])
	b := runOK(t, r, parseSpec(t, procSpec)[0])
	if a.Summary.StreamHash != b.Summary.StreamHash || a.Summary.SentHash != b.Summary.SentHash {
		t.Fatalf("streams differ: sim %s/%s, process %s/%s", a.Summary.StreamHash, a.Summary.SentHash, b.Summary.StreamHash, b.Summary.SentHash)
	}
	if a.Summary.Completed != b.Summary.Completed || a.Summary.TotalOutputTokens != b.Summary.TotalOutputTokens ||
		a.Summary.TotalInputTokens != b.Summary.TotalInputTokens {
		t.Fatalf("sim: %d completed, %d in, %d out; process: %d, %d, %d", a.Summary.Completed, a.Summary.TotalInputTokens,
			a.Summary.TotalOutputTokens, b.Summary.Completed, b.Summary.TotalInputTokens, b.Summary.TotalOutputTokens)
	}
}

// The router can run as `autoinfer router serve` (launch: process) and as
// an external vllm-router-compatible binary with flags derived from the
// config (launch: external, here autoinfer's own binary); both serve the
// trial, and the external router really ran the configured policy.
func TestRouterLaunchModes(t *testing.T) {
	bin := buildAutoinfer(t)
	modes := map[string]string{
		"process":  "launch: process",
		"external": "launch: external, binary: \"'" + bin + "' router serve\"",
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			r, led := newTestRunner(t)
			r.opts.Binary = bin
			spec := strings.Replace(fmt.Sprintf(tinySpec, "least_loaded"), "router: {policy: least_loaded}",
				"router: {policy: least_loaded, "+mode+"}", 1)
			out := runOK(t, r, parseSpec(t, spec)[0])
			if out.Router == nil || out.Router.Launch == trials.LaunchEmbedded {
				t.Fatalf("router %+v, want a child process", out.Router)
			}
			row, err := led.Get(context.Background(), out.RowID)
			if err != nil {
				t.Fatal(err)
			}
			requireZeroLoads(t, row.FinalLoads)
			if row.RouterRequests != 24 {
				t.Errorf("router counted %d requests for the run, want 24", row.RouterRequests)
			}
			// The scrape shows the decisions were made under the configured policy.
			if len(row.PolicyDecisions) != 2 {
				t.Errorf("policy decisions %v, want both workers", row.PolicyDecisions)
			}
		})
	}
}

// A router that cannot start is a typed RouterStartupFailed with a reason.
func TestRouterStartupFailureIsTyped(t *testing.T) {
	r, _ := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "router: {policy: round_robin}",
		"router: {policy: round_robin, launch: external, binary: /nonexistent/vllm-router}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure == nil || out.Failure.Kind() != failure.KindRouterStartupFailed || !strings.Contains(out.Failure.Error(), "binary_missing") {
		t.Fatalf("failure %v, want RouterStartupFailed (binary_missing)", out.Failure)
	}
}
