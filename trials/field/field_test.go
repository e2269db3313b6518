package field

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestErrorsNestAndFlatten(t *testing.T) {
	var inner Errors
	inner.Add("max_retries", "must be ≥ 1 (got %d)", 0)
	inner.Check(nil, HTTPURL("workers[0]", "a:1"))
	var outer Errors
	outer.Nest("router.retry", errors.Join(inner.Err(), errors.New("plain problem")))
	outer.Check(Required("name", ""))
	var got []string
	for _, e := range Flatten(outer.Err()) {
		got = append(got, e.Error())
	}
	want := []string{
		"router.retry.max_retries: must be ≥ 1 (got 0)",
		`router.retry.workers[0]: must be an http(s) URL (got "a:1")`,
		"router.retry: plain problem",
		"name: required",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n%q\nwant\n%q", got, want)
	}
	var empty Errors
	if empty.Err() != nil || Flatten(nil) != nil {
		t.Error("no problems must give a nil error")
	}
}

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // "" for valid
	}{
		{AtLeast("n", 0, 1), "n: must be ≥ 1 (got 0)"},
		{AtLeast("n", 1, 1), ""},
		{Above("x", 0.0, 0), "x: must be > 0 (got 0)"},
		{Above("x", math.NaN(), 0), "x: must be > 0 (got NaN)"},
		{AtMost("k", 21, 20), "k: must be ≤ 20 (got 21)"},
		{AtMost("k", math.NaN(), 20), "k: must be ≤ 20 (got NaN)"},
		{AtLeast("k", math.NaN(), 0), "k: must be ≥ 0 (got NaN)"},
		{Between("u", 1.5, 0, 1), "u: must be ≤ 1 (got 1.5)"},
		{Between("u", -1.0, 0, 1), "u: must be ≥ 0 (got -1)"},
		{Between("u", 0.5, 0, 1), ""},
		{OneOf("kind", "x", "a", "b"), `kind: must be one of a, b (got "x")`},
		{OneOf("kind", "b", "a", "b"), ""},
		{HTTPURL("u", "http://127.0.0.1:8000"), ""},
		{HTTPURL("u", "HTTPS://example.com/v1"), ""},
		{HTTPURL("u", "ftp://example.com"), `u: must be an http(s) URL (got "ftp://example.com")`},
		{HTTPURL("u", "http://"), `u: must be an http(s) URL (got "http://")`},
		{UniqueURLs("w", []string{"http://a", "http://b", "http://a"}), "w: must not list the same URL twice"},
		{UniqueURLs("w", []string{"http://a", "http://b"}), ""},
		{Host("h", "127.0.0.1"), ""},
		{Host("h", "::1"), ""},
		{Host("h", "gpu-node-3.cluster.local"), ""},
		{Host("h", "bad_host"), `h: must be a host name or IP address (got "bad_host")`},
		{Host("h", "-x"), `h: must be a host name or IP address (got "-x")`},
		{AbsPath("p", "health"), `p: must start with "/" (got "health")`},
		{Required("m", "x"), ""},
	} {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if errs := HTTPURLs("w", []string{"http://a:1", "b"}); len(errs) != 1 || errs[0].Error() != `w[1]: must be an http(s) URL (got "b")` {
		t.Errorf("HTTPURLs = %v", errs)
	}
}

// A URL's user info is refused and never echoed, whether the URL parses or
// not: a spec's error message, log line or ledger row must not carry a
// credential someone pasted into a URL.
func TestHTTPURLRefusesAndHidesUserInfo(t *testing.T) {
	for _, raw := range []string{
		"http://alice:hunter2@gpu-1:8000",
		"https://hunter2@example.com/v1",
		"http://alice:hunter2@",
		"http://alice:hun ter2@gpu-1:8000",  // invalid user info: does not parse
		"ftp://alice:hunter2@example.com",   // wrong scheme
		"alice:hunter2@gpu-1:8000",          // no scheme
		"http://a@b:hunter2@gpu-1:8000/x@y", // '@' in the user info and the path
	} {
		err := HTTPURL("gate.url", raw)
		if err == nil {
			t.Errorf("HTTPURL(%q) accepted user info", raw)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "hunter2") || !strings.HasPrefix(msg, "gate.url: ") {
			t.Errorf("HTTPURL(%q) = %q: must name the field and hide the user info", raw, msg)
		}
	}
	if got := RedactURL("http://a:b@h:1/p@q"); got != "http://[redacted]@h:1/p@q" {
		t.Errorf("RedactURL = %q", got)
	}
}

func TestPathsRefusesOtherErrors(t *testing.T) {
	paths, err := Paths(errors.Join(Errorf("a", "x"), &Error{Path: "b.c", Msg: "y"}))
	if err != nil || len(paths) != 2 || paths[0] != "a" || paths[1] != "b.c" {
		t.Errorf("Paths = %v, %v", paths, err)
	}
	if _, err := Paths(errors.Join(Errorf("a", "x"), errors.New("key: message"))); err == nil {
		t.Error("a key: message string passed as a field error")
	}
}
