package search

import (
	"slices"
	"testing"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Every problem of a search block is a *field.Error at its path in the
// spec, the one validation style (no "key: message" string to split).
func TestValidateReportsFieldErrors(t *testing.T) {
	s := Spec{Top: -1, Strategy: "bogus", Constraints: Constraints{GPUs: -1, SLO: []string{"p99_ttft_ms <"}},
		Objective: Objective{Maximize: "nope"}}
	paths, err := field.Paths(s.Validate())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"search.top", "search.strategy", "search.constraints.gpus", "search.constraints.slo[0]", "search.objective.maximize"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
}
