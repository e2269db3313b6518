package adapter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/stale"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials"
)

// identity is what the trial ran on and with, besides engine and router
// configs: the row's comparison context (ledger.Identity).
func (tr *trialRun) identity() (ledger.Identity, error) {
	t := tr.t
	id := ledger.Identity{TargetKind: t.Target.Kind, Hardware: t.Target.Hardware, Model: t.Topology.Engine.Model, Clock: ledger.ClockReal}
	if t.Virtual() {
		id.Clock = ledger.ClockVirtual
	}
	if so, ok := t.Target.Options.(profileSource); ok && (simulated(t) || t.Virtual() && so.Profiled()) {
		// The resolved coefficients, not the profile's name alone: an
		// override or a recalibrated profile is other hardware. A real
		// target's virtual replay ran its profile, not its hardware.
		p, err := so.Resolve(t.Topology.Engine)
		if err != nil {
			return ledger.Identity{}, fmt.Errorf("resolving sim profile: %w", err)
		}
		coeffs, err := hardwareConfig(p, t)
		if err != nil {
			return ledger.Identity{}, err
		}
		id.Hardware, id.HardwareConfig = p.Name, ledger.JSON(coeffs)
	}
	if tr.dep != nil && tr.dep.Hardware != nil {
		// What the target found the workers on (the kubernetes target's
		// node labels), which execute checked against target.hardware.
		cfg, err := json.Marshal(tr.dep.Hardware.Config)
		if err != nil {
			return ledger.Identity{}, fmt.Errorf("encoding hardware identity: %w", err)
		}
		id.Hardware, id.HardwareConfig = tr.dep.Hardware.Label, cfg
	}
	slo, err := json.Marshal(t.SLO)
	if err != nil {
		return ledger.Identity{}, fmt.Errorf("encoding slo: %w", err)
	}
	id.SLO = slo
	if id.WorkloadHash, err = workloadHash(tr); err != nil {
		return ledger.Identity{}, err
	}
	return id, nil
}

// profileSource is target options that name and resolve a profile of
// their workers (simtarget.Source).
type profileSource interface {
	target.ProfiledWorkers
	Resolve(engine.Config) (sim.Profile, error)
}

// hardwareConfig is a sim trial's hardware identity: the resolved profile
// and, on the virtual clock, the modelled HTTP path and engine lateness
// when set (the path's total and the part before the engine; the step lag
// and the idle wake-up), so predictions with different values are not the
// same hardware (they never compete, and the row says which it used).
// When either lateness is set both are written, 0 included: rows from
// before engine_wake_ms existed woke idle engines engine_lag_ms late, and
// carried engine_lag_ms alone.
func hardwareConfig(p sim.Profile, t trials.Trial) (json.RawMessage, error) {
	coeffs, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding sim profile: %w", err)
	}
	late := t.EngineLagMs != 0 || t.EngineWakeMs != 0
	if !t.Virtual() || t.HTTPOverheadMs == 0 && !late {
		return coeffs, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(coeffs, &doc); err != nil {
		return nil, fmt.Errorf("encoding sim profile: %w", err)
	}
	if t.HTTPOverheadMs != 0 {
		doc["http_overhead_ms"] = t.HTTPOverheadMs
	}
	if t.HTTPInboundMs != 0 {
		doc["http_inbound_ms"] = t.HTTPInboundMs
	}
	if late {
		doc["engine_lag_ms"], doc["engine_wake_ms"] = t.EngineLagMs, t.EngineWakeMs
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding sim profile: %w", err)
	}
	return b, nil
}

// workloadHash hashes everything that shapes the request stream the
// driver sends: the workload section, the seed, the stream name (the
// trial name before any matrix or variant suffix) and the warm-up count.
// Equal hashes mean byte-identical traffic.
func workloadHash(tr *trialRun) (string, error) {
	return workloadIdentity(tr.t)
}

// workloadIdentity hashes everything that shapes t's request stream: the
// workload settings, seed, stream id and warm-up, the bytes of every
// trace or dataset file it reads, so an edited file is another workload
// even at the same path, and how its generated text is drawn
// (workload.SimPrompts), so prompts drawn another way are another workload.
func workloadIdentity(t trials.Trial) (string, error) {
	files, err := workload.ContentHash(t.Workload.ResolvePaths(t.SpecDir))
	if err != nil {
		return "", fmt.Errorf("hashing the workload's files: %w", err)
	}
	doc, err := json.Marshal(struct {
		Workload any    `json:"workload"`
		Seed     int64  `json:"seed"`
		Stream   string `json:"stream"`
		Warmup   int    `json:"warmup"`
		Files    string `json:"files,omitempty"`
		Prompts  string `json:"prompts,omitempty"` // how generated text is drawn
	}{t.Workload, t.Seed, streamID(t), t.Warmup.Requests, files, t.Workload.PromptDraw()})
	if err != nil {
		return "", fmt.Errorf("encoding workload identity: %w", err)
	}
	c, err := stale.Canonical(doc)
	if err != nil {
		return "", fmt.Errorf("encoding workload identity: %w", err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:8]), nil
}
