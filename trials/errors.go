package trials

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/trials/field"
)

// FieldError is one problem in a spec, named by its YAML path.
type FieldError struct {
	// Path is the dotted YAML path: "router.prefill_policy", "assert[1]",
	// "matrix.router.policy[2]".
	Path string
	// Line is the 1-based line in the spec file, 0 when unknown.
	Line int
	Msg  string
	// Trial names the expanded matrix trial the problem belongs to; empty
	// when it concerns every trial.
	Trial string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Trial != "" {
		fmt.Fprintf(&b, "trial %s: ", e.Trial)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// SpecError lists every problem found in a spec, ordered by line.
type SpecError struct {
	File   string // empty for Parse
	Fields []*FieldError
}

func (e *SpecError) Error() string {
	prefix := "invalid spec"
	if e.File != "" {
		prefix = "invalid spec " + e.File
	}
	if len(e.Fields) == 1 {
		return prefix + ": " + e.Fields[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", prefix, len(e.Fields))
	for _, f := range e.Fields {
		b.WriteString("\n  " + f.Error())
	}
	return b.String()
}

// Unwrap exposes the field errors to errors.As.
func (e *SpecError) Unwrap() []error {
	errs := make([]error, len(e.Fields))
	for i, f := range e.Fields {
		errs[i] = f
	}
	return errs
}

// problems collects field errors while a spec is checked.
type problems struct {
	fields []*FieldError
	lines  func(path string) int // finds a path's line; may be nil
}

// add records msg for path, looking up the path's line.
func (p *problems) add(path, format string, args ...any) {
	line := 0
	if p.lines != nil {
		line = p.lines(path)
	}
	p.fields = append(p.fields, &FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// nest records the problems of a section's Validate, whose paths are
// relative to the section at prefix. Every section reports *field.Error
// (an error of another type would be recorded at prefix itself).
func (p *problems) nest(prefix string, err error) {
	var l field.Errors
	l.Nest(prefix, err)
	for _, e := range field.Flatten(l.Err()) {
		fe := e.(*field.Error) // Nest makes every problem one
		p.add(fe.Path, "%s", fe.Msg)
	}
}

// addAt records msg for path at a known line.
func (p *problems) addAt(path string, line int, format string, args ...any) {
	p.fields = append(p.fields, &FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// sortFields orders errors by line, then path, then message, and drops
// duplicates (the same problem found in several matrix trials is reported
// once, without a trial name when every trial has it).
func sortFields(fields []*FieldError, trials int) []*FieldError {
	type key struct {
		path, msg string
		line      int
	}
	count := map[key]int{}
	var out []*FieldError
	for _, f := range fields {
		k := key{f.Path, f.Msg, f.Line}
		if count[k] == 0 {
			out = append(out, f)
		}
		count[k]++
	}
	for _, f := range out {
		if count[key{f.Path, f.Msg, f.Line}] >= trials {
			f.Trial = ""
		}
	}
	slices.SortStableFunc(out, func(a, b *FieldError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Msg, b.Msg))
	})
	return out
}
