package field

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// The checks return nil when the value is fine and an *Error naming path
// otherwise, for Errors.Check.

// Required wants a non-empty string.
func Required(path, v string) error {
	if v == "" {
		return Errorf(path, "required")
	}
	return nil
}

// AtLeast wants v ≥ lo. NaN fails (cmp.Compare orders it first).
func AtLeast[T cmp.Ordered](path string, v, lo T) error {
	if cmp.Compare(v, lo) < 0 {
		return Errorf(path, "must be ≥ %v (got %v)", lo, v)
	}
	return nil
}

// Above wants v > lo. NaN fails.
func Above[T cmp.Ordered](path string, v, lo T) error {
	if cmp.Compare(v, lo) <= 0 {
		return Errorf(path, "must be > %v (got %v)", lo, v)
	}
	return nil
}

// AtMost wants v ≤ hi. NaN fails.
func AtMost[T cmp.Ordered](path string, v, hi T) error {
	if cmp.Compare(v, hi) > 0 || isNaN(v) {
		return Errorf(path, "must be ≤ %v (got %v)", hi, v)
	}
	return nil
}

// Between wants lo ≤ v ≤ hi, and says which bound v missed.
func Between[T cmp.Ordered](path string, v, lo, hi T) error {
	if err := AtLeast(path, v, lo); err != nil {
		return err
	}
	return AtMost(path, v, hi)
}

// isNaN reports whether v is a floating-point NaN, the one value unequal
// to itself.
func isNaN[T cmp.Ordered](v T) bool { return v != v }

// OneOf wants v to be one of options.
func OneOf(path, v string, options ...string) error {
	if !slices.Contains(options, v) {
		return Errorf(path, "must be one of %s (got %q)", strings.Join(options, ", "), v)
	}
	return nil
}

// HTTPURL wants an absolute http or https URL with a host and no user
// info: a credential belongs in an environment variable (the *_env
// settings), never in a spec, a log or the ledger. The error never echoes
// user info (see RedactURL).
func HTTPURL(path, v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "":
		return Errorf(path, "must be an http(s) URL (got %q)", RedactURL(v))
	case u.User != nil:
		return Errorf(path, "must not carry user info (credentials): name the key's environment variable in an *_env setting instead (got %q)", RedactURL(v))
	}
	return nil
}

// RedactURL hides everything between "//" and the last "@" of the
// authority: the whole user info, name included (a token is often sent as
// the name alone). A string without "//" that holds an "@" is hidden
// entirely, since where its user info ends cannot be told.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "//")
	if !ok {
		if strings.Contains(raw, "@") {
			return "[redacted]"
		}
		return raw
	}
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return scheme + "//[redacted]@" + rest[at+1:]
	}
	return raw
}

// HTTPURLs checks every URL of a list, naming each by its index
// (path[i]).
func HTTPURLs(path string, vs []string) []error {
	var errs []error
	for i, v := range vs {
		if err := HTTPURL(fmt.Sprintf("%s[%d]", path, i), v); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// UniqueURLs wants no URL listed twice.
func UniqueURLs(path string, vs []string) error {
	if sorted := slices.Sorted(slices.Values(vs)); len(slices.Compact(sorted)) != len(vs) {
		return Errorf(path, "must not list the same URL twice")
	}
	return nil
}

// hostLabelRE is one RFC 1123 host name label.
var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// Host wants an IP address or an RFC 1123 host name.
func Host(path, v string) error {
	if net.ParseIP(v) != nil {
		return nil
	}
	labels := strings.Split(v, ".")
	ok := len(v) > 0 && len(v) <= 253
	for _, l := range labels {
		ok = ok && hostLabelRE.MatchString(l)
	}
	if !ok {
		return Errorf(path, "must be a host name or IP address (got %q)", v)
	}
	return nil
}

// AbsPath wants a URL path starting with "/".
func AbsPath(path, v string) error {
	if !strings.HasPrefix(v, "/") {
		return Errorf(path, "must start with \"/\" (got %q)", v)
	}
	return nil
}
