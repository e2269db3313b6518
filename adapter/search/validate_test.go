package search

import (
	"errors"
	"slices"
	"testing"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Every problem of a search block is a *field.Error at its path in the
// spec, the one validation style (no "key: message" string to split).
func TestValidateReportsFieldErrors(t *testing.T) {
	s := Spec{Top: -1, Strategy: "bogus", Constraints: Constraints{GPUs: -1, SLO: []string{"p99_ttft_ms <"}},
		Objective: Objective{Maximize: "nope"}}
	var paths []string
	for _, e := range field.Flatten(s.Validate()) {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("%v (%T) is not a *field.Error", e, e)
		}
		paths = append(paths, fe.Path)
	}
	want := []string{"search.top", "search.strategy", "search.constraints.gpus", "search.constraints.slo[0]", "search.objective.maximize"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
}
