package kubernetes_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// restricted makes a namespace for this test and a ServiceAccount bound to
// the docs' namespaced rules there, less the verbs drop names by resource
// ("nodes": the ClusterRole for nodes, which is bound only when it keeps
// a verb), and returns the namespace and a kubeconfig for the account,
// once the apiserver's authorizer knows the bindings.
func restricted(t *testing.T, drop map[string][]string) (string, string) {
	t.Helper()
	c := env.Cluster(t)
	ctx := context.Background()
	ns := testNamespace(t)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	sa := "autoinfer-restricted-" + hex.EncodeToString(suffix)
	if _, err := c.Client.ServiceAccounts(sysNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: sysNS}}
	without := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, r := range rules {
			for _, res := range r.Resources {
				r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return slices.Contains(drop[res], v) })
			}
			if len(r.Verbs) > 0 {
				out = append(out, r)
			}
		}
		return out
	}
	for _, obj := range docsRBAC(t, c.Client.RBACDecoder(), "namespaced") {
		var err error
		switch o := obj.(type) {
		case *rbacv1.Role:
			o.Name, o.Rules = sa, without(o.Rules)
			if _, err = c.Client.Roles(ns).Create(ctx, o, metav1.CreateOptions{}); err == nil {
				_, err = c.Client.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: sa}, Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
				}, metav1.CreateOptions{})
			}
		case *rbacv1.ClusterRole:
			o.Name, o.Rules = sa, without(o.Rules)
			if len(o.Rules) == 0 {
				continue
			}
			if _, err = c.Client.ClusterRoles().Create(ctx, o, metav1.CreateOptions{}); err == nil {
				_, err = c.Client.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: sa}, Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
				}, metav1.CreateOptions{})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.Client.ClusterRoleBindings().Delete(context.Background(), sa, metav1.DeleteOptions{})
		_ = c.Client.ClusterRoles().Delete(context.Background(), sa, metav1.DeleteOptions{})
	})
	tok, err := c.Client.CreateToken(ctx, sysNS, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "restricted.kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	// Every case keeps listing Deployments.
	waitAuthorized(t, kubeconfig, ns)
	return ns, kubeconfig
}

// runCLI runs `autoinfer trial run` on spec with a fresh ledger and
// returns its exit code, its output, how long it took and the ledger's
// path.
func runCLI(t *testing.T, spec string) (int, string, time.Duration, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	led := filepath.Join(dir, "ledger.db")
	began := time.Now()
	out, err := exec.Command(autoinferBin, "trial", "run", path, "--ledger", led).CombinedOutput()
	took := time.Since(began)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out), took, led
}

// onlyRow is the one row a CLI run recorded.
func onlyRow(t *testing.T, path string) ledger.Trial {
	t.Helper()
	led, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	rows, err := led.List(context.Background(), ledger.Filter{IncludeStale: true})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v: %v, want one", len(rows), err)
	}
	return rows[0]
}

// Issue 35 acceptance 7: a ServiceAccount without pods list/watch fails
// the trial within seconds (not at the startup timeout, 5 minutes here)
// as an infrastructure failure, exit 3, naming the verb, the resource and
// the namespace.
func TestForbiddenPodsWatchFailsFast(t *testing.T) {
	t.Parallel()
	env.Kubelet(t)
	ns, kubeconfig := restricted(t, map[string][]string{"pods": {"list", "watch"}})
	code, out, took, led := runCLI(t, fmt.Sprintf(trialSpec, kubernetesTargetAs(t, kubeconfig, "namespace: "+ns), 24, 200))
	t.Logf("exit %d after %s:\n%s", code, took.Round(time.Millisecond), out)
	want := []string{"forbidden: may not list pods in namespace " + ns, string(failure.KindWorkerStartupFailed)}
	if code != 3 || took > 10*time.Second || !containsAll(out, want) {
		t.Fatalf("exit %d after %s, want exit 3 within 10 s naming %q", code, took, want)
	}
	if row := onlyRow(t, led); row.FailureKind != failure.KindWorkerStartupFailed || !strings.Contains(row.Failure.Error(), "list pods") {
		t.Errorf("row failure %s %v, want WorkerStartupFailed naming list pods", row.FailureKind, row.Failure)
	}
}

// Without nodes get the row has no hardware identity: the trial fails as
// an infrastructure failure naming the permission, not as Unknown.
func TestForbiddenNodesGet(t *testing.T) {
	t.Parallel()
	env.Kubelet(t)
	ns, kubeconfig := restricted(t, map[string][]string{"nodes": {"get"}})
	code, out, took, led := runCLI(t, fmt.Sprintf(trialSpec, kubernetesTargetAs(t, kubeconfig, "namespace: "+ns), 24, 200))
	t.Logf("exit %d after %s:\n%s", code, took.Round(time.Millisecond), out)
	if want := "forbidden: may not get nodes cluster-wide"; code != 3 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want 3 naming %q", code, want)
	}
	if row := onlyRow(t, led); row.FailureKind != failure.KindWorkerStartupFailed {
		t.Errorf("row failure %s %v, want WorkerStartupFailed", row.FailureKind, row.Failure)
	}
}

// Issue 35 acceptance 7: an engine container that exits on a bad flag
// fails the trial with its log line in the failure message and the row.
func TestBadFlagLogLineInFailure(t *testing.T) {
	t.Parallel()
	env.Kubelet(t)
	r, led := runner(t, nil)
	tgt := strings.Replace(kubernetesTarget(t), `"{engine_args}"]`, `"{engine_args}", --bogus-flag]`, 1)
	out, err := r.Run(context.Background(), parse(t, fmt.Sprintf(trialSpec, tgt, 24, 200)))
	if err != nil {
		t.Fatal(err)
	}
	const line = "unknown flag: --bogus-flag"
	if out.Failure == nil || out.Failure.Kind() != failure.KindWorkerStartupFailed || !strings.Contains(out.Failure.Error(), line) {
		t.Fatalf("failure %v, want WorkerStartupFailed with %q", out.Failure, line)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := row.Failure.(failure.WorkerStartupFailed)
	if !ok || !strings.Contains(f.LogTail, line) {
		t.Fatalf("row failure %#v, want its log_tail to hold %q", row.Failure, line)
	}
	t.Logf("failure: %v", out.Failure)
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
