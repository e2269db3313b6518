package kubernetes

import (
	"context"
	"errors"

	"github.com/autoinfer/autoinfer/target/kubernetes/kubeclient"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/autoinfer/autoinfer/target"
)

// namedCalls is a typed client whose List and Watch errors say which
// request the API refused: a forbidden answer becomes a *Forbidden naming
// the verb, the resource and the namespace.
type namedCalls[L runtime.Object] struct {
	c                   kubeclient.ListWatcher[L]
	resource, namespace string
}

func (n namedCalls[L]) List(ctx context.Context, o metav1.ListOptions) (L, error) {
	l, err := n.c.List(ctx, o)
	return l, asForbidden(err, "list", n.resource, n.namespace)
}

func (n namedCalls[L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := n.c.Watch(ctx, o)
	return w, asForbidden(err, "watch", n.resource, n.namespace)
}

// onWatchError is the informers' error handler: a forbidden list or watch
// is kept for wait, which fails the trial with it at once (client-go
// would retry it with back-off until the startup timeout) and ends the
// wait for the first list; any other error goes to client-go's own
// handler, which logs it while the informer retries.
func (d *deployment) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	var f *Forbidden
	if !errors.As(err, &f) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	d.forbiddenMu.Lock()
	defer d.forbiddenMu.Unlock()
	if d.forbidden == nil {
		d.forbidden = f
		d.cancelSync()
	}
}

// watchForbidden is the first forbidden list or watch of the informers as
// a StartupError, nil while there is none.
func (d *deployment) watchForbidden() error {
	d.forbiddenMu.Lock()
	defer d.forbiddenMu.Unlock()
	if d.forbidden == nil {
		return nil
	}
	return forbiddenStartup(d.forbidden, d.firstRole())
}

// forbiddenStartup wraps a refused request for the trial runner: the
// workers cannot start (or be known) without it.
func forbiddenStartup(f *Forbidden, role target.Role) error {
	return &target.StartupError{Worker: target.Worker{Role: role}, Reason: f.Error(), Err: f}
}

// firstRole is the role of the trial's first Deployment, collocated when
// there is none yet.
func (d *deployment) firstRole() target.Role {
	if len(d.roles) > 0 {
		return d.roles[0].role
	}
	return target.Collocated
}
