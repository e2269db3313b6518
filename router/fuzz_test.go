package router

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// Fuzz targets for every parser of outside input in the router. `go test`
// runs their seeds as ordinary tests; `make fuzz` explores further.

// Inference bodies: parseOpenAI never panics, accepts only JSON objects,
// answers 400 invalid_request otherwise, and its text stays proportional to
// the body.
func FuzzInboundBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello"}`, `{"prompt":["a",[1,2]]}`, `{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}]}`,
		`{"input":[[1,2],[3]]}`, `{"text":"t"}`, `{"prompt":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
		`[1]`, `"x"`, `{"messages":"no"}`, `{"model":7}`, `{`, ``, `{"prompt":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, text, apiErr := parseOpenAI(body)
		if apiErr != nil {
			if apiErr.Status != http.StatusBadRequest || apiErr.Type != ErrTypeInvalidRequest {
				t.Fatalf("rejection %d %s, want 400 invalid_request", apiErr.Status, apiErr.Type)
			}
			return
		}
		if trimmed := bytes.TrimLeft(body, " \t\r\n"); !json.Valid(body) || len(trimmed) == 0 || (trimmed[0] != '{' && string(trimmed[:min(4, len(trimmed))]) != "null") {
			t.Fatalf("accepted a body that is not a JSON object: %q", body)
		}
		if len(text) > 2*len(body)+1 {
			t.Fatalf("text of %d bytes from a %d-byte body", len(text), len(body))
		}
	})
}

// Usage tap: whatever the worker sends, the usage found does not depend on
// how the body was cut into chunks, and accounting never panics.
func FuzzUsageTap(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"), true, uint16(7))
	f.Add([]byte(`{"usage":{"prompt_tokens":7,"completion_tokens":3}}`), false, uint16(3))
	f.Add([]byte("data: {\"usage\":null}\r\ndata:{\"usage\":{\"prompt_tokens\":-1}}\n"), true, uint16(0))
	f.Add([]byte(`{"usage":{"prompt_tokens":1e400}}`), false, uint16(1))
	runs := newRunSeries(newMetrics(prometheus.NewRegistry()), 2)
	f.Fuzz(func(t *testing.T, body []byte, sse bool, cut uint16) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		whole := newUsageTap(ct)
		_, _ = whole.Write(body)
		split := newUsageTap(ct)
		at := int(cut) % (len(body) + 1)
		_, _ = split.Write(body[:at])
		_, _ = split.Write(body[at:])
		a, b := whole.Usage(), split.Usage()
		if (a == nil) != (b == nil) || (a != nil && *a != *b) {
			t.Fatalf("usage %+v whole, %+v split at %d", a, b, at)
		}
		// Per-run accounting takes any usage without panicking.
		runs.record("run", a)
	})
}

// Admin JSON and worker URLs: POST /workers answers 201/200/400 and only
// ever admits a URL that passes checkWorkerURL; DELETE answers 200/404.
// No answer echoes user info.
func FuzzAdminWorkers(f *testing.F) {
	for _, s := range []string{`{"url":"http://127.0.0.1:9"}`, `{"url":"http://u:p@h:1"}`, `{"url":"http://h:1/?q"}`,
		`{"url":"https://h/prefix/"}`, `{"url":7}`, `{}`, `[`, `{"url":"http://[::1]:80"}`, `{"url":"http://h:1#x"}`} {
		f.Add([]byte(s), "http://h:1")
	}
	cfg := testConfig("round_robin")
	r, err := New(cfg, withAdmin())
	if err != nil {
		f.Fatal(err)
	}
	h := r.Handler()
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/workers", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testAdminKey)
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusCreated, http.StatusOK:
			var got struct{ URL string }
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || routerconfig.CheckWorkerURL(got.URL) != nil {
				t.Fatalf("admitted %q (%v): %v", got.URL, err, routerconfig.CheckWorkerURL(got.URL))
			}
			if !r.Pool().Remove(got.URL) && rec.Code == http.StatusCreated {
				t.Fatalf("added %q is not in the pool", got.URL)
			}
		case http.StatusBadRequest:
			var in struct{ URL string }
			if json.Unmarshal(body, &in) == nil {
				if u, err := url.Parse(in.URL); err == nil && u.User != nil {
					if p, ok := u.User.Password(); ok && len(p) > 3 && !strings.Contains(u.Host+u.Path, p) && strings.Contains(rec.Body.String(), p) {
						t.Fatalf("400 body echoes the password: %s", rec.Body.String())
					}
				}
			}
		default:
			t.Fatalf("POST /workers %q → %d %s", body, rec.Code, rec.Body.String())
		}
		target := "/workers/" + url.PathEscape(path)
		if u, err := url.Parse(target); err != nil || u.Path == "" {
			return
		}
		rec = httptest.NewRecorder()
		req = httptest.NewRequest(http.MethodDelete, target, nil)
		req.Header.Set("Authorization", "Bearer "+testAdminKey)
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusOK && rec.Code != http.StatusMovedPermanently && rec.Code != http.StatusTemporaryRedirect {
			t.Fatalf("DELETE %s → %d", target, rec.Code)
		}
	})
}

// Worker URLs and their redaction: an accepted URL is http(s), has a host
// and no user info, query or fragment; redaction never shows user info.
func FuzzWorkerURL(f *testing.F) {
	for _, s := range []string{"http://h:1", "https://u:p@h", "http://tok@h/x", "http://h/a@b", "http://h?x", "http://h#f",
		"ftp://h", "//h", "http:h", "http://[::1]:8", "http://h:1/p?", "http://a@b@c/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if routerconfig.CheckWorkerURL(raw) == nil {
			u, err := url.Parse(raw)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				t.Fatalf("accepted %q", raw)
			}
		}
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			return
		}
		red := routerconfig.RedactURL(raw)
		authority := raw[strings.Index(raw, "//")+2:]
		if at := strings.LastIndex(strings.SplitN(authority, "/", 2)[0], "@"); at > 0 {
			if user := authority[:at]; len(user) > 3 && strings.Contains(red, user) {
				t.Fatalf("routerconfig.RedactURL(%q) = %q shows the user info", raw, red)
			}
		}
	})
}

// Request headers: run ids, bearer tokens and pass-through paths.
func FuzzRequestHeaders(f *testing.F) {
	for _, s := range []string{"run-1", "Bearer k", "bearer  k ", "/tokenize", "/v1/responses/x", "/v1/responses/../admin", "/a%2Fb"} {
		f.Add(s)
	}
	pass := newPassthrough(routerconfig.DefaultPassthroughRoutes())
	f.Fuzz(func(t *testing.T, s string) {
		if validRunID(s) && (len(s) > maxRunIDLen || strings.ContainsAny(s, " \"\\\n\r\t<>")) {
			t.Fatalf("run id %q accepted", s)
		}
		if tok, ok := bearer(http.Header{"Authorization": {s}}); ok && (tok == "" || strings.TrimSpace(tok) != tok) {
			t.Fatalf("bearer(%q) = %q", s, tok)
		}
		u, err := url.Parse("http://r" + s)
		if err != nil || !strings.HasPrefix(s, "/") {
			return
		}
		if pass.allows(&http.Request{URL: u}) && (strings.Contains(u.Path, "..") || strings.Contains(u.Path, "//") ||
			strings.HasPrefix(u.Path, "/admin") || strings.Contains(strings.ToLower(u.RawPath), "%2f")) {
			t.Fatalf("pass-through allows %q (path %q)", s, u.Path)
		}
	})
}
