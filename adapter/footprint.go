package adapter

import (
	"fmt"
	"math"
	"strings"

	"github.com/autoinfer/autoinfer/adapter/hostmem"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/trials"
	"github.com/autoinfer/autoinfer/trials/field"
)

// A trial that does not fit the machine dies half-way (or takes the machine
// with it) and leaves no row; trial run estimates each trial's peak memory
// before starting anything and refuses a spec whose estimate exceeds what
// the machine has. The estimate counts what autoinfer's own process (and a
// child router) hold: the driver's bodies and records, simulated engines'
// bookkeeping and the requests inside them, and the router's buffers and
// prefix tree. Real servers' memory is theirs.
const (
	// processBaseBytes is autoinfer itself: runtime, ledger, HTTP stacks.
	processBaseBytes = 64 << 20
	// routerBaseBytes is a router without requests: pools, metrics.
	routerBaseBytes = 16 << 20
	// treeBytesPerToken is cache_aware's tree per prompt token it holds
	// (text plus node overhead; max_tree_size caps the total).
	treeBytesPerToken = 8
)

// Footprint is a trial's estimated peak memory on this machine, by part.
type Footprint struct {
	Trial string
	// Driver is the requests' bodies and records (driver.EstimateMemory).
	Driver int64
	// Engines is in-process simulated engines: their KV bookkeeping and
	// the requests in flight inside them (0 for real servers).
	Engines int64
	// Router is its in-flight bodies and prefix tree (0 without a router).
	Router int64
	// Base is the process itself.
	Base int64
}

// Total is the sum of the parts.
func (f Footprint) Total() int64 { return f.Driver + f.Engines + f.Router + f.Base }

func (f Footprint) String() string {
	parts := []string{"driver " + field.Bytes(f.Driver)}
	if f.Engines > 0 {
		parts = append(parts, "simulated engines "+field.Bytes(f.Engines))
	}
	if f.Router > 0 {
		parts = append(parts, "router "+field.Bytes(f.Router))
	}
	parts = append(parts, "process "+field.Bytes(f.Base))
	return fmt.Sprintf("%s (%s)", field.Bytes(f.Total()), strings.Join(parts, ", "))
}

// EstimateMemory estimates t's peak memory. Trace and dataset files are
// read to size them; an error means they could not be.
func EstimateMemory(t trials.Trial) (Footprint, error) {
	s := t.Spec
	f := Footprint{Trial: t.Name, Base: processBaseBytes}
	d, err := driver.EstimateMemory(driver.Config{Workload: s.Workload.ResolvePaths(t.SpecDir), NumPrompts: s.Workload.NumPrompts,
		Arrival: s.Workload.Arrival, WarmupRequests: warmupCount(s.Warmup.Requests)})
	if err != nil {
		return f, fmt.Errorf("trial %s: workload: %w", t.Name, err)
	}
	f.Driver = d.Bytes
	meanIn, meanOut := d.Measured.MeanInput(), d.Measured.MeanOutput()
	inflight := float64(d.Measured.Requests)
	if c := s.Workload.Arrival.MaxConcurrency; c > 0 {
		inflight = math.Min(inflight, float64(c))
	}

	if w, ok := s.Target.Options.(target.InProcessWorkers); ok {
		topo := s.Topology.Target()
		engines, err := w.WorkerMemory(topo)
		if err != nil {
			return f, fmt.Errorf("trial %s: sizing simulated engines: %w", t.Name, err)
		}
		if s.Gate.Reference == trials.ReferenceSim {
			ref, err := w.WorkerMemory(target.Topology{Replicas: 1, Engine: referenceEngine(topo.Engine)})
			if err != nil {
				return f, fmt.Errorf("trial %s: sizing the gate's reference engine: %w", t.Name, err)
			}
			engines += ref
		}
		// Every request in flight sits in one engine (in two, briefly,
		// with prefill/decode disaggregation).
		legs := 1.0
		if s.Topology.PD() {
			legs = 2
		}
		f.Engines = engines + int64(legs*inflight*float64(w.RequestMemory(int(meanIn+meanOut))))
	}

	if s.RouterLaunched() {
		body := float64(driver.BodyBytes(meanIn))
		bodies := math.Min(inflight*body, float64(s.Router.MaxBodyMemory))
		f.Router = routerBaseBytes + int64(bodies)
		if usesPolicy(s.Router, policy.CacheAware) {
			tree := float64(d.Measured.InputTokens) * treeBytesPerToken
			f.Router += int64(math.Min(tree, float64(s.Router.MaxTreeSize)))
		}
	}
	return f, nil
}

// warmupCount is the number of warm-up requests a spec's warmup.requests
// asks the driver for (0 there means none).
func warmupCount(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// usesPolicy reports whether the router runs policy name anywhere.
func usesPolicy(r trials.Router, name string) bool {
	if r.PDDisaggregation {
		return r.PrefillPolicy == name || r.DecodePolicy == name
	}
	return r.Policy == name
}

// MemoryError is a trial refused because its estimate exceeds the memory
// available.
type MemoryError struct {
	Footprint Footprint
	Limit     hostmem.Limit
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("trial %s needs an estimated %s of memory, but this machine has %s available (%s); "+
		"lower workload.num_prompts, the token lengths, the concurrency or the engines' sizes",
		e.Footprint.Trial, e.Footprint, field.Bytes(e.Limit.Bytes), e.Limit.Source)
}

// CheckMemory estimates every trial (they run one at a time) and refuses
// the first whose estimate exceeds limit.
func CheckMemory(ts []trials.Trial, limit hostmem.Limit) error {
	for _, t := range ts {
		f, err := EstimateMemory(t)
		if err != nil {
			return err
		}
		if f.Total() > limit.Bytes {
			return &MemoryError{Footprint: f, Limit: limit}
		}
	}
	return nil
}
