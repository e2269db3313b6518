package driver

import (
	"fmt"
	"strings"
	"testing"
)

// A session value is the scheme with each placeholder replaced by its
// value, as one strings.Replacer over the four placeholders renders it:
// placeholders side by side or nested in braces, a value holding a
// placeholder (not expanded again), an unknown placeholder and a lone
// brace.
func TestSessionValueRendersScheme(t *testing.T) {
	schemes := []string{DefaultSessionScheme, "", "plain", "{", "}{", "{index}", "{{index}}", "{turn}{index}{session}{trial_id}",
		"x-{index-{turn}", "{unknown}-{session}", "{trial_id{session}}", "{trial_id", "a{b}c{index}", "{{{turn}"}
	for _, trial := range []string{"t1", "{index}", ""} {
		for _, scheme := range schemes {
			c := Config{TrialID: trial, SessionScheme: scheme}
			for _, in := range [][3]any{{"s-{turn}", 7, 2}, {"", 0, 0}, {"42", 123456, 9}} {
				session, index, turn := in[0].(string), in[1].(int), in[2].(int)
				want := strings.NewReplacer("{trial_id}", trial, "{session}", session,
					"{index}", fmt.Sprint(index), "{turn}", fmt.Sprint(turn)).Replace(scheme)
				if got := c.sessionValue(session, index, turn); got != want {
					t.Errorf("scheme %q, trial %q, session %q, index %d, turn %d: %q, want %q", scheme, trial, session, index, turn, got, want)
				}
			}
		}
	}
}
