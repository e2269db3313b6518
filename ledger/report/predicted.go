package report

import (
	"context"
	"fmt"

	"github.com/autoinfer/autoinfer/ledger"
)

// Prediction is a selected real-time row that confirms a virtual
// prediction (search --confirm), with each metric's prediction, measurement
// and ratio, as `ledger compare --predicted` gives them.
type Prediction struct {
	Measured  int64                `json:"measured"`
	Predicted int64                `json:"predicted"`
	Name      string               `json:"name"`
	Refused   string               `json:"refused,omitempty"`
	Agrees    bool                 `json:"agrees"`
	Metrics   []ledger.MetricError `json:"metrics"`
}

// predictionsOf reads the virtual row each selected real-time row
// confirms; it also returns the pairs, for their drift.
func predictionsOf(ctx context.Context, src Source, ts []ledger.Trial) ([]Prediction, []ledger.Prediction, error) {
	var out []Prediction
	var pairs []ledger.Prediction
	for _, t := range ts {
		if t.PredictedBy == nil {
			continue
		}
		v, err := src.Get(ctx, *t.PredictedBy)
		if err != nil {
			return nil, nil, fmt.Errorf("trial %d: predicted_by: %w", t.ID, err)
		}
		p := ledger.Prediction{Predicted: v, Measured: t}
		pairs = append(pairs, p)
		errs := p.Errors()
		out = append(out, Prediction{Measured: t.ID, Predicted: v.ID, Name: t.Name, Refused: p.Refused(), Agrees: p.Agrees(errs), Metrics: errs})
	}
	return out, pairs, nil
}
