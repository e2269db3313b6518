package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// controlSetting is how a spec's `control: zero_reuse` names a trial's
// control arm: its settings followed by this one (trials/control.go).
const controlSetting = "control=zero_reuse"

// ControlName is the name of the zero-reuse control arm of the trial
// named name: "t/router.policy=x" → "t/router.policy=x,control=zero_reuse",
// "t" → "t/control=zero_reuse".
func ControlName(name string) string {
	if strings.Contains(name, "/") {
		return name + "," + controlSetting
	}
	return name + "/" + controlSetting
}

// IsControl reports whether a trial's name is a control arm's.
func IsControl(name string) bool { return strings.HasSuffix(name, controlSetting) }

// controlMetrics are the figures a gain over control is shown on: the
// reuse itself, the latencies it should move, throughput, and shedding.
var controlMetrics = []string{"prefix_cache_hit_rate", "p50_ttft_ms", "p99_ttft_ms", "mean_e2el_ms", "request_throughput", "shed_rate"}

// ControlGain is a side's gain over its zero-reuse control: Metrics put
// the control (A) beside the side (B), so Diff is the side's gain.
type ControlGain struct {
	Side    string        `json:"side"` // "A" or "B"
	Control Side          `json:"control"`
	Metrics []MetricDelta `json:"metrics"`
}

// controlGain finds the control arm of every trial of s (the latest ok
// trial of ControlName in the same sweep) and puts them beside s. It is
// nil when s is itself a control or any of its trials has no control: a
// gain over some of them would be another side's.
func (l *Ledger) controlGain(ctx context.Context, label string, s Side) (*ControlGain, error) {
	ctl := Side{Ref: "control of " + s.Ref, Resolved: "control"}
	for _, t := range s.Trials {
		if IsControl(t.Name) {
			return nil, nil
		}
		var id int64
		err := l.db.GetContext(ctx, &id, l.db.Rebind(`SELECT id FROM trials WHERE name = ? AND sweep_id = ? AND status = 'ok'
			ORDER BY started_at DESC, id DESC LIMIT 1`), ControlName(t.Name), t.SweepID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("finding the control of trial %d: %w", t.ID, err)
		}
		c, err := l.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		ctl.Trials = append(ctl.Trials, c)
		ctl.IDs = append(ctl.IDs, c.ID)
		ctl.Names = append(ctl.Names, c.Name)
	}
	if len(ctl.Trials) == 0 {
		return nil, nil
	}
	ms := make([]Metric, len(controlMetrics))
	for i, name := range controlMetrics {
		m, err := LookupMetric(name)
		if err != nil {
			return nil, err // a name above out of the catalogue
		}
		ms[i] = m
	}
	arm := s
	arm.Group = nil // the controls are not replicated: compare means
	return &ControlGain{Side: label, Control: ctl, Metrics: deltas(ctl, arm, ms)}, nil
}
