package k8stest

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
)

// Admin is the harness's client: the target's clientset plus the
// resources only the harness and the tests touch (service accounts and
// their tokens, quotas, replica sets, RBAC, node leases), each group
// coding only its own types.
type Admin struct {
	*kubeclient.Clientset
	core, apps, rbac, coordination *kubeclient.Group
}

func newAdmin(cfg *rest.Config) (*Admin, error) {
	a := &Admin{}
	var err error
	if a.Clientset, err = kubeclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	// A TokenRequest is a serviceaccounts subresource: core codes it.
	if a.core, err = kubeclient.NewGroup(cfg, nil, corev1.SchemeGroupVersion, corev1.AddToScheme, authenticationv1.AddToScheme); err != nil {
		return nil, err
	}
	if a.apps, err = kubeclient.NewGroup(cfg, nil, appsv1.SchemeGroupVersion, appsv1.AddToScheme); err != nil {
		return nil, err
	}
	if a.rbac, err = kubeclient.NewGroup(cfg, nil, rbacv1.SchemeGroupVersion, rbacv1.AddToScheme); err != nil {
		return nil, err
	}
	if a.coordination, err = kubeclient.NewGroup(cfg, nil, coordinationv1.SchemeGroupVersion, coordinationv1.AddToScheme); err != nil {
		return nil, err
	}
	return a, nil
}

// ServiceAccounts is the client of the service accounts in namespace.
func (a *Admin) ServiceAccounts(namespace string) *gentype.ClientWithList[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return kubeclient.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList](a.core, "serviceaccounts", namespace)
}

// CreateToken asks for a token of service account namespace/name.
func (a *Admin) CreateToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	out := &authenticationv1.TokenRequest{}
	err := a.core.REST().Post().UseProtobufAsDefault().Namespace(namespace).Resource("serviceaccounts").Name(name).
		SubResource("token").VersionedParams(&opts, a.core.ParameterCodec()).Body(req).Do(ctx).Into(out)
	return out, err
}

// ResourceQuotas is the client of the quotas in namespace.
func (a *Admin) ResourceQuotas(namespace string) *gentype.ClientWithList[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return kubeclient.Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList](a.core, "resourcequotas", namespace)
}

// ReplicaSets is the client of the ReplicaSets in namespace ("" for
// every namespace).
func (a *Admin) ReplicaSets(namespace string) *gentype.ClientWithList[*appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return kubeclient.Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](a.apps, "replicasets", namespace)
}

// ClusterRoles is the client of ClusterRoles.
func (a *Admin) ClusterRoles() *gentype.ClientWithList[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return kubeclient.Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](a.rbac, "clusterroles", "")
}

// ClusterRoleBindings is the client of ClusterRoleBindings.
func (a *Admin) ClusterRoleBindings() *gentype.ClientWithList[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return kubeclient.Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](a.rbac, "clusterrolebindings", "")
}

// Roles is the client of the Roles in namespace.
func (a *Admin) Roles(namespace string) *gentype.ClientWithList[*rbacv1.Role, *rbacv1.RoleList] {
	return kubeclient.Resource[*rbacv1.Role, *rbacv1.RoleList](a.rbac, "roles", namespace)
}

// RoleBindings is the client of the RoleBindings in namespace.
func (a *Admin) RoleBindings(namespace string) *gentype.ClientWithList[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return kubeclient.Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](a.rbac, "rolebindings", namespace)
}

// RBACDecoder decodes YAML or JSON manifests of rbac/v1 objects.
func (a *Admin) RBACDecoder() runtime.Decoder { return a.rbac.Decoder() }

// Leases is the client of the Leases in namespace.
func (a *Admin) Leases(namespace string) *gentype.ClientWithList[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return kubeclient.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList](a.coordination, "leases", namespace)
}
