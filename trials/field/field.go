package field

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one invalid field.
type Error struct {
	// Path is the field's YAML path: "router.retry.max_retries",
	// "workers[0]", "env.CUDA_VISIBLE_DEVICES".
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errorf returns an *Error for path.
func Errorf(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Errors collects the problems of one Validate call; the zero value is
// ready to use.
type Errors struct{ errs []error }

// Add records a problem at path.
func (l *Errors) Add(path, format string, args ...any) {
	l.errs = append(l.errs, Errorf(path, format, args...))
}

// Check records every non-nil err (the checks below return nil when a
// field is fine).
func (l *Errors) Check(errs ...error) {
	for _, err := range errs {
		if err != nil {
			l.errs = append(l.errs, err)
		}
	}
}

// Nest records the problems of a nested section's Validate under prefix:
// a nested *Error's path is joined to prefix, any other error is recorded
// at prefix itself.
func (l *Errors) Nest(prefix string, err error) {
	for _, e := range Flatten(err) {
		var fe *Error
		if errors.As(e, &fe) {
			l.errs = append(l.errs, &Error{Path: Join(prefix, fe.Path), Msg: fe.Msg})
			continue
		}
		l.errs = append(l.errs, &Error{Path: prefix, Msg: e.Error()})
	}
}

// Err joins the recorded problems; nil when there are none.
func (l *Errors) Err() error { return errors.Join(l.errs...) }

// Flatten lists the errors inside err, unwrapping errors.Join (also
// nested joins); nil for a nil err.
func Flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Flatten(e)...)
	}
	return out
}

// Join appends a key or an index ("[2]") to a path.
func Join(parent, key string) string {
	switch {
	case parent == "":
		return key
	case key == "":
		return parent
	case strings.HasPrefix(key, "["):
		return parent + key
	}
	return parent + "." + key
}

// Paths lists the paths of err's problems in order, for the conformance
// tests of sections that validate in this style: a problem that is not an
// *Error (a "key: message" string, say) is reported instead.
func Paths(err error) ([]string, error) {
	var paths []string
	for _, e := range Flatten(err) {
		var fe *Error
		if !errors.As(e, &fe) {
			return paths, fmt.Errorf("%q (%T) is not a *field.Error", e.Error(), e)
		}
		paths = append(paths, fe.Path)
	}
	return paths, nil
}
