package stale

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Row is what the rule needs to know about a ledger row.
type Row struct {
	ID     int64
	Status string // ok, failed, aborted
	// Context is everything but the router config that must be equal for
	// two rows to be compared: target kind, hardware, model, engine config,
	// request stream, topology. Empty means unknown: compared with nothing.
	Context string
	// PD says the row ran prefill/decode disaggregated, which decides the
	// router settings in effect (see Effective).
	PD           bool
	RouterConfig json.RawMessage
	Stale        bool
	// SweepID groups the trials of one matrix expansion ("" for none).
	SweepID string
	// ReplicateGroup groups the runs of one repeated trial ("" for none).
	ReplicateGroup string
}

// Mark says row ID becomes stale, and why.
type Mark struct {
	ID     int64
	Reason string
}

// Marks applies the rule (see the package doc) to the row just recorded
// and the earlier rows, returning the rows to mark in the order given.
// Only an ok row invalidates others: a failed or aborted run of a new
// router config is no evidence against the old measurements. Rows of the
// same sweep never invalidate each other: a sweep over router settings is a
// deliberate side-by-side comparison, and every one of its rows must stay
// on the Pareto front. (Sweep ids derive from the sweep's definition, so a
// re-run of the same sweep compares with its earlier rows too; an edited
// sweep has a new id and invalidates them as usual.) Replicates of one
// repeated trial (equal, non-empty ReplicateGroup) never invalidate each
// other either: they are one trial measured several times.
func Marks(current Row, earlier []Row) ([]Mark, error) {
	if current.Status != "ok" || !HasRouter(current.RouterConfig) {
		return nil, nil
	}
	var marks []Mark
	for _, e := range earlier {
		if e.ID == current.ID || e.Stale || current.Context == "" || e.Context != current.Context ||
			!HasRouter(e.RouterConfig) || (current.SweepID != "" && e.SweepID == current.SweepID) ||
			(current.ReplicateGroup != "" && e.ReplicateGroup == current.ReplicateGroup) {
			continue
		}
		changes, err := Diff(e.RouterConfig, current.RouterConfig)
		if err != nil {
			return nil, fmt.Errorf("comparing row %d: %w", e.ID, err)
		}
		changes = slices.DeleteFunc(changes, func(c Change) bool { return !Effective(c.Path, e.PD) || !Effective(c.Path, current.PD) })
		if len(changes) > 0 {
			marks = append(marks, Mark{ID: e.ID, Reason: Reason(changes)})
		}
	}
	return marks, nil
}
