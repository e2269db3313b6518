package kubeclient

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Group is a REST client for one API group version whose scheme holds only
// the types it was given: what a generated client's NewForConfig builds,
// without the all-groups scheme.
type Group struct {
	rest   rest.Interface
	params runtime.ParameterCodec
	codecs serializer.CodecFactory
}

// NewGroup builds the client for gv on cfg's cluster, coding the types
// addToScheme registers (gv's own, plus any its subresources carry).
// httpClient is shared between the groups of one clientset; nil builds
// one from cfg.
func NewGroup(cfg *rest.Config, httpClient *http.Client, gv schema.GroupVersion, addToScheme ...func(*runtime.Scheme) error) (*Group, error) {
	scheme := runtime.NewScheme()
	// Status and the option types every group's responses and query
	// parameters use, as client-go's scheme registers them.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("registering %s types: %w", gv, err)
		}
	}
	codecs := serializer.NewCodecFactory(scheme)
	c := *cfg
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(&c); err != nil {
			return nil, fmt.Errorf("building the %s http client: %w", gv, err)
		}
	}
	rc, err := rest.RESTClientForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", gv, err)
	}
	return &Group{rest: rc, params: runtime.NewParameterCodec(scheme), codecs: codecs}, nil
}

// REST is the group's untyped request builder, for subresources the
// typed clients lack.
func (g *Group) REST() rest.Interface { return g.rest }

// ParameterCodec encodes option structs as query parameters.
func (g *Group) ParameterCodec() runtime.ParameterCodec { return g.params }

// Decoder decodes YAML or JSON manifests of the group's registered types.
func (g *Group) Decoder() runtime.Decoder { return g.codecs.UniversalDeserializer() }

// Resource is the typed client of one resource of the group (namespace ""
// for cluster-scoped resources, or every namespace), preferring protobuf
// as client-go's generated clients do for built-in types.
func Resource[T interface {
	*E
	runtime.Object
	metav1.Object
}, L interface {
	*LE
	runtime.Object
}, E, LE any](g *Group, resource, namespace string) *gentype.ClientWithList[T, L] {
	return gentype.NewClientWithList(resource, g.rest, g.params, namespace,
		func() T { return T(new(E)) }, func() L { return L(new(LE)) }, gentype.PrefersProtobuf[T]())
}
