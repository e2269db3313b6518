package ledger

import (
	"net/url"
	"strings"
)

// IsPostgres reports whether a ledger location names a PostgreSQL database
// (a postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// Redact returns a ledger location fit to print: a PostgreSQL URL with its
// password (in the user info or a password query parameter) replaced by
// xxxxx. A SQLite path is returned as is. Every message, log line and
// report that names a ledger goes through it, so credentials given in a
// URL never leave the process.
func Redact(location string) string {
	if !IsPostgres(location) {
		return location
	}
	u, err := url.Parse(location)
	if err != nil {
		// An unparsable URL may still hold a password: name only the scheme.
		scheme, _, _ := strings.Cut(location, "://")
		return scheme + "://(unparsable URL)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// secrets are the strings of a location that must not appear in an error:
// the URL's password, raw and percent-decoded.
func secrets(location string) []string {
	if !IsPostgres(location) {
		return nil
	}
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
			if d, err := url.PathUnescape(s); err == nil && d != s {
				out = append(out, d)
			}
		}
	}
	rest, _ := strings.CutPrefix(location, "postgresql://")
	rest, _ = strings.CutPrefix(rest, "postgres://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			add(pw)
		}
	}
	if u, err := url.Parse(location); err == nil {
		add(u.Query().Get("password"))
	}
	return out
}

// scrubbed is an error whose message has a location's secrets masked; it
// unwraps to the original so errors.Is and errors.As still see it.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub masks the location's password wherever it occurs in err's message
// (a driver may quote its connection string): the last line of defence
// behind Redact.
func scrub(err error, location string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets(location) {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}
