package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
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
// namespaces; "namespaced": the Role in sharedNS plus node reading).
func targetKubeconfig(t *testing.T, block string) string {
	t.Helper()
	c := env.Cluster(t)
	kubeconfigMu.Lock()
	defer kubeconfigMu.Unlock()
	if p, ok := kubeconfigs[block]; ok {
		return p
	}
	ctx := context.Background()
	for _, ns := range []string{sysNS, sharedNS} {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
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
		case *rbacv1.Role:
			if _, err = c.Client.Roles(sharedNS).Create(ctx, o, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
				_, err = c.Client.RoleBindings(sharedNS).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: sa}, Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: o.Name},
				}, metav1.CreateOptions{})
			}
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
