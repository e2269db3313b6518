package virtual

import (
	"errors"
	"fmt"
	"time"

	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials"
)

// BaseURL is what the driver is told it sends to in a virtual run; nothing
// listens there.
const BaseURL = "http://virtual.invalid:1"

// FromTrial builds t's deployment: one simulated engine per topology slot
// with the target's resolved profile and the spec's engine settings (as the
// sim target provisions them; for a target of real servers that names a
// profile, the engines that profile says they are), named by URLs that sort in slot order, and
// the spec's router configuration over them when a router is launched,
// its engines late by the spec's engine_lag_ms (a step) and
// engine_wake_ms (an idle engine's wake-up).
func FromTrial(t trials.Trial) (*Deployment, error) {
	so, ok := t.Target.Options.(profileSource)
	if !ok || !so.Profiled() {
		return nil, fmt.Errorf("clock: virtual needs target.kind sim or a target that names a profile, got %s", t.Target.Kind)
	}
	prof, err := so.Resolve(t.Topology.Engine)
	if err != nil {
		return nil, fmt.Errorf("target.profile: %w", err)
	}
	topo := t.Topology.Target()
	var ws []Worker
	urls := map[target.Role][]string{}
	for i, slot := range topo.Slots() {
		url := fmt.Sprintf("http://virtual-%03d-%s-%d.invalid:1", i, slot.Role, slot.Rank)
		urls[slot.Role] = append(urls[slot.Role], url)
		ws = append(ws, Worker{URL: url, Options: sim.Options{Engine: topo.Engine, Profile: prof, Role: sim.Role(slot.Role)}})
	}
	if len(ws) == 0 {
		return nil, errors.New("topology: no workers")
	}
	var rcfg *router.Config
	if t.RouterLaunched() {
		c := t.Router.Config
		if c.PDDisaggregation {
			c.PrefillURLs, c.DecodeURLs = urls[target.Prefill], urls[target.Decode]
		} else {
			c.WorkerURLs = urls[target.Collocated]
		}
		rcfg = &c
	}
	d, err := New(ws, rcfg, uint64(t.Seed))
	if err != nil {
		return nil, err
	}
	lag, wake := time.Duration(t.EngineLagMs*float64(time.Millisecond)), time.Duration(t.EngineWakeMs*float64(time.Millisecond))
	if err := d.fleet.SetLag(lag, wake); err != nil {
		return nil, fmt.Errorf("engine_lag_ms, engine_wake_ms: %w", err)
	}
	return d, nil
}

// profileSource is target options that name and resolve a profile of their
// workers (simtarget.Source: the sim target's, or a real target's profile
// keys).
type profileSource interface {
	target.ProfiledWorkers
	Resolve(engine.Config) (sim.Profile, error)
}
