package stale

import (
	"encoding/json"
	"fmt"
)

// Row is what the rule needs to know about a ledger row.
type Row struct {
	ID           int64
	Status       string // ok, failed, aborted
	EngineHash   string
	RouterConfig json.RawMessage
	Stale        bool
}

// Mark says row ID becomes stale, and why.
type Mark struct {
	ID     int64
	Reason string
}

// Marks applies the rule (see the package doc) to the row just recorded
// and the earlier rows, returning the rows to mark in the order given.
// Only an ok row invalidates others: a failed or aborted run of a new
// router config is no evidence against the old measurements.
func Marks(current Row, earlier []Row) ([]Mark, error) {
	if current.Status != "ok" || !HasRouter(current.RouterConfig) {
		return nil, nil
	}
	var marks []Mark
	for _, e := range earlier {
		if e.ID == current.ID || e.Stale || e.EngineHash != current.EngineHash || !HasRouter(e.RouterConfig) {
			continue
		}
		changes, err := Diff(e.RouterConfig, current.RouterConfig)
		if err != nil {
			return nil, fmt.Errorf("comparing row %d: %w", e.ID, err)
		}
		if len(changes) > 0 {
			marks = append(marks, Mark{ID: e.ID, Reason: Reason(changes)})
		}
	}
	return marks, nil
}
