package kubernetes

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/target/process"
)

// placeholders are the names command, args and env values may use. Every
// pod of a role's Deployment has the same spec, so per-pod values such as
// the process target's {rank} and {index} do not exist here; the pod's own
// IP is $(POD_IP) (see Options.Env).
var placeholders = []string{"model", "port", "engine_args", "role"}

var placeholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// checkWord rejects unknown placeholders; {engine_args} must be a whole
// list element where it expands to several (inWords).
func checkWord(w string, inWords bool) error {
	for _, m := range placeholderRE.FindAllStringSubmatch(w, -1) {
		if !slices.Contains(placeholders, m[1]) {
			return fmt.Errorf("unknown placeholder %s (known: {%s})", m[0], strings.Join(placeholders, "} {"))
		}
	}
	if inWords && w != "{engine_args}" && strings.Contains(w, "{engine_args}") {
		return fmt.Errorf("%q: {engine_args} must be a list element of its own (it expands to several arguments)", w)
	}
	return nil
}

// vars are one role's placeholder values: the process target's, of which
// a Deployment has only the role-wide ones (checkWord refuses {host},
// {rank} and {index} before anything expands).
type vars = process.Vars

// words renders a command or args list; "{engine_args}" becomes the
// engine's arguments.
func words(v vars, ws []string) []string {
	var out []string
	for _, w := range ws {
		if w == "{engine_args}" {
			out = append(out, v.EngineArgs...)
			continue
		}
		out = append(out, v.Expand(w))
	}
	return out
}

// uses reports whether any word mentions placeholder name.
func uses(name string, lists ...[]string) bool {
	for _, l := range lists {
		if slices.ContainsFunc(l, func(w string) bool { return strings.Contains(w, "{"+name+"}") }) {
			return true
		}
	}
	return false
}
