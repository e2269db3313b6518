package kubernetes_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	k8starget "github.com/autoinfer/autoinfer/target/kubernetes"
)

// The tests run the target as it would run on a real cluster: under a
// ServiceAccount token bound to exactly the rules docs/targets.md gives,
// read from the doc itself.
var (
	kubeconfigMu sync.Mutex
	kubeconfigs  = map[string]string{} // by rbac block
)

// targetKubeconfig returns a kubeconfig authenticating as a ServiceAccount
// bound to the docs' RBAC block ("cluster": the ClusterRole for fresh
// namespaces; "namespaced": node reading here, the Role in each
// testNamespace).
func targetKubeconfig(t *testing.T, block string) string {
	t.Helper()
	c := env.Cluster(t)
	kubeconfigMu.Lock()
	defer kubeconfigMu.Unlock()
	if p, ok := kubeconfigs[block]; ok {
		return p
	}
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sysNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := targetSA + "-" + block
	if _, err := c.Client.ServiceAccounts(sysNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: sysNS}}
	for _, obj := range docsRBAC(t, c.Client.RBACDecoder(), block) {
		var err error
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			if _, err = c.Client.ClusterRoles().Create(ctx, o, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
				_, err = c.Client.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + o.Name}, Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: o.Name},
				}, metav1.CreateOptions{})
			}
		case *rbacv1.Role: // made in each testNamespace
		default:
			t.Fatalf("docs rbac block %s: unexpected %T", block, obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tok, err := c.Client.CreateToken(ctx, sysNS, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "autoinfer-k8s-kubeconfig-")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, block+".kubeconfig")
	if err := c.WriteKubeconfig(path, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	kubeconfigs[block] = path
	return path
}

// testNamespace makes a namespace for this test alone, with the docs'
// namespaced Role bound to the "namespaced" ServiceAccount, and deletes
// it when the test ends (without waiting: the namespace controller takes
// seconds). Tests that provision into a given namespace use it, so they
// can run in parallel.
func testNamespace(t *testing.T) string {
	t.Helper()
	c := env.Cluster(t)
	kubeconfig := targetKubeconfig(t, "namespaced")
	ctx := context.Background()
	suffix := make([]byte, 2)
	_, _ = rand.Read(suffix)
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	ns := fmt.Sprintf("%.50s-%x", base, suffix)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting test namespace %s: %v", ns, err)
		}
	})
	sa := targetSA + "-namespaced"
	for _, obj := range docsRBAC(t, c.Client.RBACDecoder(), "namespaced") {
		o, ok := obj.(*rbacv1.Role)
		if !ok {
			continue
		}
		if _, err := c.Client.Roles(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: sysNS}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: o.Name},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAuthorized(t, kubeconfig, ns)
	return ns
}

// waitAuthorized waits until kubeconfig's account may list Deployments in
// ns: the apiserver's authorizer learns of a new binding from its watch.
func waitAuthorized(t *testing.T, kubeconfig, ns string) {
	t.Helper()
	client, err := k8starget.Client(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		_, err := client.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
		switch {
		case err == nil:
			return
		case !apierrors.IsForbidden(err) || time.Now().After(deadline):
			t.Fatalf("the ServiceAccount of %s listing deployments in %s: %v", kubeconfig, ns, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the authorizer
	}
}

// nonName matches what a namespace name cannot hold.
var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// docsRBAC decodes the YAML documents between the block's markers in
// docs/targets.md.
func docsRBAC(t *testing.T, dec runtime.Decoder, block string) []any {
	t.Helper()
	doc, err := os.ReadFile("../../docs/targets.md")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := fmt.Sprintf("<!-- rbac:%s:begin -->", block), fmt.Sprintf("<!-- rbac:%s:end -->", block)
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("docs/targets.md has no %s … %s", begin, end)
	}
	body := strings.TrimSpace(text[i+len(begin) : j])
	body = strings.TrimSuffix(strings.TrimPrefix(body, "```yaml"), "```")
	var out []any
	for _, part := range strings.Split(body, "\n---\n") {
		obj, _, err := dec.Decode([]byte(part), nil, nil)
		if err != nil {
			t.Fatalf("docs rbac block %s: %v", block, err)
		}
		out = append(out, obj)
	}
	return out
}
