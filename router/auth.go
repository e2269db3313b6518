package router

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path"
	"strings"

	"github.com/autoinfer/autoinfer/router/h1"
)

// access is who may call a route.
type access int

const (
	accessPublic  access = iota // liveness, readiness, health: always open
	accessClient                // inference, /v1/models, pass-through: the API key, when one is set
	accessObserve               // /metrics, GET /workers, /get_loads: the API or the admin key, when either is set
	accessAdmin                 // changing the worker set: the admin key; disabled without one
)

// keyring holds the keys' digests: comparing digests of equal length in
// constant time reveals neither a key's bytes nor its length.
type keyring struct {
	api, admin [sha256.Size]byte
	hasAPI     bool
	hasAdmin   bool
}

func newKeyring(s Secrets) keyring {
	return keyring{api: sha256.Sum256([]byte(s.APIKey)), admin: sha256.Sum256([]byte(s.AdminAPIKey)),
		hasAPI: s.APIKey != "", hasAdmin: s.AdminAPIKey != ""}
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(h http.Header) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authorize checks a request against a route's access rule; nil admits it.
func (k keyring) authorize(h http.Header, a access) *apiError {
	if a == accessPublic {
		return nil
	}
	if a == accessAdmin && !k.hasAdmin {
		return newAPIError(http.StatusForbidden, ErrTypeAdminDisabled,
			"admin routes are disabled: start the router with admin_api_key_env (or --admin-api-key) to enable them")
	}
	open := (a == accessClient && !k.hasAPI) || (a == accessObserve && !k.hasAPI && !k.hasAdmin)
	if open {
		return nil
	}
	if token, ok := bearer(h); ok {
		sum := sha256.Sum256([]byte(token))
		apiOK := k.hasAPI && subtle.ConstantTimeCompare(sum[:], k.api[:]) == 1
		adminOK := k.hasAdmin && subtle.ConstantTimeCompare(sum[:], k.admin[:]) == 1
		switch a {
		case accessClient:
			if apiOK {
				return nil
			}
		case accessObserve:
			if apiOK || adminOK {
				return nil
			}
		case accessAdmin:
			if adminOK {
				return nil
			}
		}
	}
	what := "API key"
	if a == accessAdmin {
		what = "admin key"
	}
	return newAPIError(http.StatusUnauthorized, ErrTypeUnauthorized,
		"missing or invalid "+what+": send Authorization: Bearer <key>")
}

// guarded serves h only to requests a admits.
func (r *Router) guarded(a access, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if e := r.keys.authorize(req.Header, a); e != nil {
			closeUnread(w, req)
			denied(w, e)
			return
		}
		h(w, req)
	}
}

func denied(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="autoinfer-router"`)
	}
	writeError(w, e)
}

// passthrough decides which unnamed paths reach workers: exact paths and
// "/prefix/*" patterns, matched on a path that is already clean, so no
// "..", doubled slash or encoded separator can step from an allowed path to
// a worker's control route.
type passthrough struct {
	exact    map[string]bool
	prefixes []string // each ends in "/"
}

func newPassthrough(patterns []string) passthrough {
	p := passthrough{exact: map[string]bool{}}
	for _, pat := range patterns {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			p.prefixes = append(p.prefixes, prefix)
		} else {
			p.exact[pat] = true
		}
	}
	return p
}

func (p passthrough) allows(req *http.Request) bool {
	u := req.URL
	if path.Clean(u.Path) != u.Path || strings.Contains(u.Path, `\`) {
		return false
	}
	if raw := strings.ToLower(u.RawPath); strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") {
		return false
	}
	if p.exact[u.Path] {
		return true
	}
	for _, prefix := range p.prefixes {
		if strings.HasPrefix(u.Path, prefix) && len(u.Path) > len(prefix) {
			return true
		}
	}
	return false
}

// credentialHeaders are the client's credentials: never forwarded to
// workers unless forward_client_auth is set.
var credentialHeaders = []string{"Authorization", "Cookie", "X-Api-Key", "Api-Key"}

// workerAuth sends the router's own worker key on every request to a
// worker that does not already carry a forwarded Authorization.
type workerAuth struct {
	base   *h1.Transport
	header string
}

func (t *workerAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", t.header)
	}
	return t.base.RoundTrip(req)
}

func (t *workerAuth) CloseIdleConnections() { t.base.CloseIdleConnections() }
