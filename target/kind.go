package target

import "log/slog"

// Kind is one kind of target a trial spec can name (target.kind: sim,
// static, process). Each target package exports its Kind name and its
// Options type; the composition root (adapter/targetkinds) registers them,
// so the spec model depends on no target implementation.
type Kind struct {
	Name string
	// New returns empty options, a pointer, for the spec's target section
	// to be decoded into.
	New func() Options
}

// Options is one target kind's section of a trial spec: a struct whose
// yaml tags are the keys under `target:` (besides kind) and whose json tags
// give the canonical form hashed with the spec.
type Options interface {
	// Default fills in the kind's defaults for fields the spec left out, so
	// the spec hash and the ledger record what runs.
	Default()
	// Validate checks every field for a trial of topology topo and returns
	// every problem joined, each a *field.Error whose path is relative to
	// the section ("command", "workers[0]").
	Validate(topo Topology) error
	// Provisioner builds the target the options describe; log reports its
	// lifecycle.
	Provisioner(log *slog.Logger) (Provisioner, error)
}

// ListedWorkers is Options that list their workers (static URLs): a spec's
// topology defaults to their counts and must agree with them.
type ListedWorkers interface {
	Options
	// Listed returns the counts by role (Engine is unset).
	Listed() Topology
}

// SimulatedWorkers is Options whose workers are simulated engines. Only
// next to them is a simulated reference replica comparable, so the quality
// gate defaults to one, provisioned from the same options.
type SimulatedWorkers interface {
	Options
	// Simulated reports whether the workers are simulated engines.
	Simulated() bool
}

// ProfiledWorkers is Options that can name a profile (the step model's
// coefficients) of their workers: the virtual clock runs simulated engines
// of it, so their trials can run, or be replayed, in virtual time. The sim
// target's engines are that profile; a target of real servers that names
// one has it as a model of them.
type ProfiledWorkers interface {
	Options
	// Profiled reports whether the options name a profile.
	Profiled() bool
}

// HardwareReporter is Options whose deployments find out what they run on
// (Deployment.Hardware): target.hardware is optional for them and must
// agree with what they report when given.
type HardwareReporter interface {
	Options
	// ReportsHardware reports whether deployments carry Hardware.
	ReportsHardware() bool
}
