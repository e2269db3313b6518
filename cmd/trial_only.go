package cmd

import (
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/trials"
)

// onlyTrials keeps the trials of ts named in names (trial run --only), in
// the spec's order. They keep the sweep id of the whole expansion, so a
// re-run member is recorded as part of its sweep and marks none of its
// siblings stale (the stale rule never compares rows of one sweep). A name
// the spec does not expand to, or a member that only repeats another
// member's measurement (SameAs) without that member, is a usage error.
func onlyTrials(ts []trials.Trial, names []string) ([]trials.Trial, error) {
	var unknown []string
	for _, n := range names {
		if !slices.ContainsFunc(ts, func(t trials.Trial) bool { return t.Name == n }) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		all := make([]string, len(ts))
		for i, t := range ts {
			all[i] = t.Name
		}
		return nil, usageErr("--only: the spec has no trial %s; its trials: %s", strings.Join(unknown, ", "), strings.Join(all, ", "))
	}
	var out []trials.Trial
	for _, t := range ts {
		if !slices.Contains(names, t.Name) {
			continue
		}
		if t.SameAs != "" && !slices.Contains(names, t.SameAs) {
			return nil, usageErr("--only %s: it runs the same as %s (%s); re-run %s instead", t.Name, t.SameAs, t.SameBecause, t.SameAs)
		}
		out = append(out, t)
	}
	return out, nil
}
