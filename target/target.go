package target

import (
	"context"
	"fmt"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Role is what a worker does in a deployment.
type Role string

// The three roles. A deployment is either all collocated workers or a mix of
// prefill and decode workers (prefill/decode disaggregation).
const (
	Collocated Role = "collocated"
	Prefill    Role = "prefill"
	Decode     Role = "decode"
)

// Topology is what a trial asks a target for: how many workers of each role,
// all running the same engine configuration.
type Topology struct {
	// Replicas is the number of collocated workers; 0 when Prefill and
	// Decode are set.
	Replicas int
	Prefill  int
	Decode   int
	Engine   engine.Config
}

// PD reports whether the topology disaggregates prefill and decode.
func (t Topology) PD() bool { return t.Prefill > 0 || t.Decode > 0 }

// Validate checks the counts: either replicas, or both prefill and decode.
// Problems are *field.Error under "topology".
func (t Topology) Validate() error {
	var l field.Errors
	l.Check(
		field.AtLeast("topology.replicas", t.Replicas, 0),
		field.AtLeast("topology.prefill", t.Prefill, 0),
		field.AtLeast("topology.decode", t.Decode, 0),
	)
	switch {
	case t.PD() && t.Replicas > 0:
		l.Add("topology.replicas", "mutually exclusive with prefill and decode")
	case t.PD() && (t.Prefill <= 0 || t.Decode <= 0):
		l.Add("topology", "prefill/decode needs at least one worker of each role")
	case !t.PD() && t.Replicas <= 0:
		l.Add("topology.replicas", "needs at least one worker")
	}
	return l.Err()
}

// Slots lists the workers a topology asks for in the order every target
// provisions them: collocated, then prefill, then decode, each by rank.
// The URL fields are empty; targets fill them in.
func (t Topology) Slots() []Worker {
	var ws []Worker
	add := func(r Role, n int) {
		for i := range n {
			ws = append(ws, Worker{Role: r, Rank: i})
		}
	}
	add(Collocated, t.Replicas)
	add(Prefill, t.Prefill)
	add(Decode, t.Decode)
	return ws
}

// Worker is one provisioned inference server.
type Worker struct {
	Role Role
	// Rank is the worker's index within its role (prefill 0, prefill 1, …).
	Rank int
	// URL is the base URL without a trailing slash, e.g. http://127.0.0.1:8100.
	URL string
	// LogPath is the file the worker's output goes to, when the target
	// captures it (process target); empty otherwise.
	LogPath string
	// Name is the worker's own name where the target has one (the
	// kubernetes target's namespace/pod); empty otherwise.
	Name string
	// KVEvents and KVEventsReplay are the worker's KV event sockets
	// (tcp://host:port) when the target knows them (the sim target with
	// engine.extra_args.kv_events_config); empty otherwise.
	KVEvents, KVEventsReplay string
}

// String names the worker in errors and logs: "prefill[1] http://…", with
// the pod when there is one: "prefill[1] http://… (pod ns/name)".
func (w Worker) String() string {
	s := fmt.Sprintf("%s[%d]", w.Role, w.Rank)
	if w.URL != "" {
		s += " " + w.URL
	}
	if w.Name != "" {
		s += " (pod " + w.Name + ")"
	}
	return s
}

// Provisioner starts the workers of a topology. On error it has already
// released everything it started, so callers only Close successful
// deployments. ctx bounds provisioning only: workers outlive it until Close.
type Provisioner interface {
	Provision(ctx context.Context, topo Topology) (*Deployment, error)
}
