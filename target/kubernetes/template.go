package kubernetes

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/target"
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

// vars are one role's placeholder values.
type vars struct {
	model      string
	port       int
	engineArgs []string
	role       target.Role
}

// words renders a command or args list; "{engine_args}" becomes the
// engine's arguments.
func (v vars) words(ws []string) []string {
	var out []string
	for _, w := range ws {
		if w == "{engine_args}" {
			out = append(out, v.engineArgs...)
			continue
		}
		out = append(out, v.expand(w))
	}
	return out
}

// expand substitutes placeholders in s ({engine_args} joined by spaces).
func (v vars) expand(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		switch m[1 : len(m)-1] {
		case "model":
			return v.model
		case "port":
			return strconv.Itoa(v.port)
		case "engine_args":
			return strings.Join(v.engineArgs, " ")
		case "role":
			return string(v.role)
		}
		return m
	})
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
