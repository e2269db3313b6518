package workload

import (
	"maps"
	"slices"
)

// sortedKeys returns m's keys in order, so iteration is deterministic.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
