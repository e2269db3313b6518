package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/autoinfer/autoinfer/target"
)

// pollInterval is how often provisioning looks at the informers' caches
// (no API traffic) and probes pods that became Ready.
const pollInterval = 100 * time.Millisecond

// readyPod is a worker whose pod answered.
type readyPod struct {
	worker   target.Worker
	uid      types.UID
	node     string
	restarts int32
}

// wait returns the workers once every role has its pods Ready and
// answering the health path and /v1/models with the model, in Slots order
// (ranks by pod name). A pod failure the API shows ends it at once.
func (d *deployment) wait(ctx context.Context, opts Options, topo target.Topology) ([]readyPod, error) {
	if err := d.watch(ctx); err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	answered := map[types.UID]readyPod{}
	lastProgress := ""
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if err := d.watchForbidden(); err != nil {
			return nil, err
		}
		if err := d.refused(); err != nil {
			return nil, err
		}
		pods := d.listPods()
		var probe []*corev1.Pod
		for _, p := range pods {
			if err := podFailure(p); err != nil {
				return nil, startupError(p, err)
			}
			if _, ok := answered[p.UID]; !ok && podReady(p) {
				probe = append(probe, p)
			}
		}
		for _, r := range probeAll(ctx, client, probe, opts, topo.Engine.Model) {
			answered[r.uid] = r
		}
		if progress := d.progress(pods, answered); progress != lastProgress {
			d.log.Info("kubernetes: waiting for workers", "namespace", d.namespace, "progress", progress)
			lastProgress = progress
		}
		if ready, ok := d.complete(answered); ok {
			return ready, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for workers (%s): %w", lastProgress, ctx.Err())
		case <-tick.C:
		}
	}
}

// complete picks each role's workers once enough answered.
func (d *deployment) complete(answered map[types.UID]readyPod) ([]readyPod, bool) {
	var out []readyPod
	for _, rc := range d.roles {
		var role []readyPod
		for _, r := range answered {
			if r.worker.Role == rc.role {
				role = append(role, r)
			}
		}
		if len(role) < rc.n {
			return nil, false
		}
		slices.SortFunc(role, func(a, b readyPod) int { return cmp.Compare(a.worker.Name, b.worker.Name) })
		for i := range rc.n {
			role[i].worker.Rank = i
			out = append(out, role[i])
		}
	}
	return out, true
}

// progress is one line per role: created, scheduled, running, ready.
func (d *deployment) progress(pods []*corev1.Pod, answered map[types.UID]readyPod) string {
	var parts []string
	for _, rc := range d.roles {
		var created, scheduled, running, ready int
		for _, p := range pods {
			if p.Labels[RoleLabel] != string(rc.role) {
				continue
			}
			created++
			if p.Spec.NodeName != "" {
				scheduled++
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			if _, ok := answered[p.UID]; ok {
				ready++
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d pods, %d scheduled, %d running, %d ready", rc.role, created, rc.n, scheduled, running, ready))
	}
	return strings.Join(parts, "; ")
}

// timeout turns the startup timeout into a StartupError saying how far
// the pods got. Pods Ready in the API that never answered here usually
// mean autoinfer is outside the cluster network, which the reason says.
func (d *deployment) timeout(opts Options, err error) error {
	role := target.Collocated
	if len(d.roles) > 0 {
		role = d.roles[0].role
	}
	reason := fmt.Sprintf("not ready after %s (startup_timeout)", opts.StartupTimeout)
	if d.pods != nil && slices.ContainsFunc(d.listPods(), podReady) {
		reason += "; pods are Ready but do not answer from here: with runner local, autoinfer must run inside the cluster network (else use runner in-cluster)"
	}
	return &target.StartupError{Worker: target.Worker{Role: role}, Reason: reason, Err: err}
}

func podReady(p *corev1.Pod) bool {
	if p.Status.PodIP == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// probeAll probes pods in parallel and returns those that answered.
func probeAll(ctx context.Context, client *http.Client, pods []*corev1.Pod, opts Options, model string) []readyPod {
	var mu sync.Mutex
	var out []readyPod
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() {
			base := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(opts.Port))
			if answers(ctx, client, base, opts.HealthPath, model) != nil {
				return
			}
			var restarts int32
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
			mu.Lock()
			out = append(out, readyPod{
				worker: target.Worker{Role: target.Role(p.Labels[RoleLabel]), URL: base, Name: podKey(p)},
				uid:    p.UID, node: p.Spec.NodeName, restarts: restarts,
			})
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// answers checks GET health (200) and GET /v1/models (lists model).
func answers(ctx context.Context, client *http.Client, base, health, model string) error {
	if _, err := get(ctx, client, base+health); err != nil {
		return err
	}
	body, err := get(ctx, client, base+"/v1/models")
	if err != nil {
		return err
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil {
		return fmt.Errorf("GET %s/v1/models: %w", base, err)
	}
	for _, m := range models.Data {
		if m.ID == model {
			return nil
		}
	}
	return fmt.Errorf("GET %s/v1/models does not list %s", base, model)
}

func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}
