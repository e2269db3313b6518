package calibrate

import (
	"fmt"
	"slices"

	"github.com/autoinfer/autoinfer/target/sim"
)

// Refit is a refit from ledger rows: the fit, and the error of the
// profile before (as given) and after on rows the fit did not see.
type Refit struct {
	Fit               *Fit
	FitRows, HeldRows []int64
	// Before and After are the relative errors per metric (step: the
	// median step error) of the profile before and after the refit.
	Before, After Figures
}

// RefitRows refits before's step model on the rows' steps, holding out
// every fifth row (and at least one), and compares the profile before and
// after on the held-out rows: the median step error and, by replaying
// each held-out row's arrivals on the virtual clock, its figures. Rows
// are used as they come (give them in time order: the held-out ones then
// spread over the period). A row's requests must come from one engine:
// the steps are read from their token times. Steps over the engine's
// token budget (eng's, else before's) are chunked prefills and left out.
func RefitRows(before sim.Profile, eng sim.Options, ids []int64, rows []Observed) (*Refit, error) {
	if len(rows) < 2 {
		return nil, fmt.Errorf("%d rows with request records: need 2 or more (one is held out)", len(rows))
	}
	r := &Refit{}
	var fitSteps, heldSteps []Step
	var held []Observed
	// A step that seems to compute more tokens than the engine's budget
	// prefilled a prompt in chunks whose earlier steps emitted nothing:
	// its composition is unknown, so it is left out.
	budget := before.MaxNumBatchedTokens
	if eng.Engine.MaxNumBatchedTokens > 0 {
		budget = eng.Engine.MaxNumBatchedTokens
	}
	if budget == 0 {
		budget = 8192 // the engine's default, see sim.Profile
	}
	for i := range rows {
		st := slices.DeleteFunc(Steps(i, &rows[i]), func(s Step) bool { return s.Batch.Tokens() > budget })
		if i%5 == 4 || (len(rows) < 5 && i == len(rows)-1) {
			heldSteps, held, r.HeldRows = append(heldSteps, st...), append(held, rows[i]), append(r.HeldRows, ids[i])
			continue
		}
		fitSteps, r.FitRows = append(fitSteps, st...), append(r.FitRows, ids[i])
	}
	fit, err := FitSteps(before, fitSteps)
	if fit == nil {
		return nil, err
	}
	r.Fit = fit
	measured := Measure(held)
	for _, c := range []struct {
		p    sim.Profile
		figs *Figures
	}{{before, &r.Before}, {fit.Profile, &r.After}} {
		opts := eng
		opts.Profile = c.p
		pred, perr := Predict(opts, held)
		if perr != nil {
			return nil, perr
		}
		*c.figs = Errors(pred, measured)
		(*c.figs)[MetricStep] = StepError(c.p, heldSteps)
	}
	return r, err
}

// RefitFile renders the refitted profile file (name, of the built-in base)
// of rows read from source (the ledger and its filters).
func RefitFile(name, base, source string, r *Refit) ([]byte, error) {
	cal := &sim.Calibration{Server: sim.CalibratedServer{URL: source}, Groups: len(r.FitRows) + len(r.HeldRows), HeldOut: len(r.HeldRows)}
	return renderFile(name, base, r.Fit, r.After, cal, nil,
		fmt.Sprintf("refitted by autoinfer sim calibrate --from-ledger on %s: rows %v fitted, rows %v held out; %d steps",
			source, r.FitRows, r.HeldRows, r.Fit.Steps))
}
