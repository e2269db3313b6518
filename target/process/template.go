package process

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/target"
)

// placeholders are the names a command template (and env values) may use.
var placeholders = []string{"model", "host", "port", "engine_args", "role", "rank", "index"}

var placeholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Template is a parsed command template: words split like a shell would
// (whitespace separates, single and double quotes group, backslash escapes
// outside single quotes), with placeholders still in them. No other shell
// feature applies: no variables, globs, pipes or redirections.
type Template struct {
	words []string
}

// ParseTemplate splits and checks a command template. {engine_args} must be
// a word of its own because it expands to several arguments; unknown
// placeholders are errors.
func ParseTemplate(s string) (Template, error) {
	words, err := splitWords(s)
	if err != nil {
		return Template{}, err
	}
	if len(words) == 0 {
		return Template{}, errors.New("empty command")
	}
	for _, w := range words {
		if err := checkPlaceholders(w); err != nil {
			return Template{}, err
		}
		if w != "{engine_args}" && strings.Contains(w, "{engine_args}") {
			return Template{}, fmt.Errorf("%q: {engine_args} must be a separate word (it expands to several arguments)", w)
		}
	}
	return Template{words: words}, nil
}

// Uses reports whether the template mentions placeholder name ("port").
func (t Template) Uses(name string) bool {
	return slices.ContainsFunc(t.words, func(w string) bool { return strings.Contains(w, "{"+name+"}") })
}

// Vars are the values of one worker's placeholders.
type Vars struct {
	Model      string
	Host       string
	Port       int
	EngineArgs []string
	Role       target.Role
	Rank       int
	// Index is the worker's position across all roles (0…n-1), handy for
	// CUDA_VISIBLE_DEVICES.
	Index int
}

// Argv renders the command line for one worker.
func (t Template) Argv(v Vars) []string {
	var argv []string
	for _, w := range t.words {
		if w == "{engine_args}" {
			argv = append(argv, v.EngineArgs...)
			continue
		}
		argv = append(argv, v.Expand(w))
	}
	return argv
}

// Expand substitutes placeholders in s; {engine_args} becomes the
// arguments joined by spaces (only meaningful in env values).
func (v Vars) Expand(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		switch m[1 : len(m)-1] {
		case "model":
			return v.Model
		case "host":
			return v.Host
		case "port":
			return strconv.Itoa(v.Port)
		case "engine_args":
			return strings.Join(v.EngineArgs, " ")
		case "role":
			return string(v.Role)
		case "rank":
			return strconv.Itoa(v.Rank)
		case "index":
			return strconv.Itoa(v.Index)
		}
		return m
	})
}

// checkPlaceholders rejects {names} that are not placeholders, so a typo
// such as {prot} fails at validation instead of reaching the server.
func checkPlaceholders(s string) error {
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(placeholders, m[1]) {
			return fmt.Errorf("unknown placeholder %s (known: {%s})", m[0], strings.Join(placeholders, "} {"))
		}
	}
	return nil
}

// CheckEnvValue validates an env value's placeholders.
func CheckEnvValue(s string) error { return checkPlaceholders(s) }

// splitWords splits s into words with shell-like quoting.
func splitWords(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("unterminated %c quote", quote)
	case escaped:
		return nil, errors.New("trailing backslash")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
