package cmd

import (
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/failure"
)

// An engine that ran behind its clock points at the engine lag bound; a
// trial that failed otherwise gets no hint.
func TestOverloadHintNamesTheFigure(t *testing.T) {
	lag := trialResult{Outcome: adapter.Outcome{Name: "q/x", Failure: failure.HostOverloaded{Figure: failure.FigureEngineLagRatio, Value: 0.9, Bound: 0.5}}}
	if h := overloadHint([]trialResult{lag}); !strings.Contains(h, "q/x") || !strings.Contains(h, "--max-engine-lag-ratio") || !strings.Contains(h, "--clock virtual") {
		t.Errorf("engine lag hint: %q", h)
	}
	other := trialResult{Outcome: adapter.Outcome{Name: "q/y", Failure: failure.Unknown{Message: "boom"}}}
	if h := overloadHint([]trialResult{other}); h != "" {
		t.Errorf("hint for a failure that is not HostOverloaded: %q", h)
	}
}
