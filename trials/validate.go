package trials

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/go-playground/validator/v10"
)

// nameRE keeps trial names safe in file names, ledger queries and the
// "base/path=value" names of matrix trials.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// newValidator checks struct tags, reporting fields by their YAML names.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			return "-"
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	return v
}

// validate checks s (already defaulted) and records every problem in p.
func validate(s *Spec, base string, present func(string) bool, p *problems) {
	if base == "" {
		p.add("name", "required")
	} else if !nameRE.MatchString(base) {
		p.add("name", "must be letters, digits, '.', '_' or '-' (got %q)", base)
	}
	if err := newValidator().Struct(s); err != nil {
		var ves validator.ValidationErrors
		if !errors.As(err, &ves) {
			p.add("", "validating: %v", err)
		}
		for _, fe := range ves {
			_, path, _ := strings.Cut(fe.Namespace(), ".") // drop the root type
			p.add(path, "%s", describe(fe))
		}
	}
	validateTarget(s, present, p)
	validateTopology(s, present, p)
	if s.RouterLaunched() {
		validateRouter(s, present, p)
	}
	validateWorkload(s.Workload, p)
	validateChecks(s, p)
	validateGate(s.Gate, p)
}

// describe turns a validator failure into a short message.
func describe(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "required"
	case "oneof":
		return fmt.Sprintf("must be one of %s (got %q)", strings.ReplaceAll(fe.Param(), " ", ", "), fe.Value())
	case "gte", "min":
		return fmt.Sprintf("must be ≥ %s (got %v)", fe.Param(), fe.Value())
	case "gt":
		return fmt.Sprintf("must be > %s (got %v)", fe.Param(), fe.Value())
	case "lte", "max":
		return fmt.Sprintf("must be ≤ %s (got %v)", fe.Param(), fe.Value())
	case "http_url":
		return fmt.Sprintf("must be an http(s) URL (got %q)", fe.Value())
	case "startswith":
		return fmt.Sprintf("must start with %q (got %q)", fe.Param(), fe.Value())
	case "hostname_rfc1123|ip":
		return fmt.Sprintf("must be a host name or IP address (got %q)", fe.Value())
	}
	return fmt.Sprintf("fails %q (got %v)", fe.Tag(), fe.Value())
}

// unjoin splits an errors.Join result.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// addKeyed records a "key: message" error under section.key.
func addKeyed(p *problems, section string, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			addKeyed(p, section, e)
		}
		return
	}
	key, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok || strings.ContainsAny(key, " \"") {
		p.add(section, "%v", err)
		return
	}
	p.add(section+"."+key, "%s", msg)
}
