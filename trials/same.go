package trials

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autoinfer/autoinfer/stale"
)

// markSame finds the trials of an expansion that would run the same thing
// after defaults, and marks each later one SameAs the first: crossing a
// policy matrix with `topology.replicas: [1, 2]` makes single-replica
// trials that launch no router, so their policies change nothing; a PD
// variant ignores router.policy. Such a trial is not run again (trial run
// says so), since it would only repeat a measurement under another name.
func markSame(ts []Trial) {
	first := map[string]int{}
	for i := range ts {
		key, err := ts[i].runKey()
		if err != nil {
			continue // not hashable: never treated as a repeat
		}
		if j, seen := first[key]; seen {
			ts[i].SameAs = ts[j].Name
			ts[i].SameBecause = sameBecause(ts[i], ts[j])
			continue
		}
		first[key] = i
	}
}

// runKey identifies what a trial runs apart from its name: its canonical
// JSON without the name, and without the router settings that are not in
// effect for its topology (stale.Effective), hashed.
func (t Trial) runKey() (string, error) {
	b, err := json.Marshal(t.Spec)
	if err != nil {
		return "", fmt.Errorf("encoding trial: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("decoding trial: %w", err)
	}
	delete(m, "name")
	if r, ok := m["router"].(map[string]any); ok {
		for k := range r {
			if !stale.Effective("router."+k, t.Topology.PD()) {
				delete(r, k)
			}
		}
	}
	b, err = json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding trial: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// sameBecause says why two trials with different settings run the same:
// which of the repeat's settings had no effect.
func sameBecause(t, first Trial) string {
	var differ []string
	for i, s := range t.Settings {
		if i < len(first.Settings) && first.Settings[i] != s {
			differ = append(differ, s.Path+"="+s.Value)
		}
	}
	why := "no effect"
	switch {
	case !t.RouterLaunched():
		why = "no effect: one replica without PD runs no router"
	case t.Topology.PD():
		why = "no effect: PD routes by prefill_policy and decode_policy"
	}
	if len(differ) == 0 {
		return "identical after defaults"
	}
	return strings.Join(differ, ",") + " has " + why
}
