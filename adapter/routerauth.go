package adapter

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
)

// A router launched with router.api_key_env answers 401 to every inference
// and observability request without "Authorization: Bearer <key>". The
// trial is its own client: the driver, the quality gate's deployment
// prompts, the load drain and the metrics scrape all go through the
// router, so all of them carry the key. It is read from the environment
// when the trial starts and is never stored: not in the spec, the row, the
// driver's records or any file.

// routerKey is the key a keyed router wants ("" when the router is open or
// not launched).
func (tr *trialRun) routerKey() (string, error) {
	name := tr.t.Router.APIKeyEnv
	if !tr.t.RouterLaunched() || name == "" {
		return "", nil
	}
	key := os.Getenv(name)
	if key == "" {
		return "", fmt.Errorf("router.api_key_env: environment variable %s is unset or empty", name)
	}
	return key, nil
}

// routerClient returns a client that sends key to routerURL's origin (and
// nowhere else: the gate's reference replica and the workers never see
// it); base when there is no key.
func routerClient(base *http.Client, routerURL, key string) (*http.Client, error) {
	if key == "" {
		return base, nil
	}
	u, err := url.Parse(routerURL)
	if err != nil {
		return nil, fmt.Errorf("router URL: %w", err)
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &bearerTransport{base: rt, scheme: u.Scheme, host: u.Host, key: key}
	return &c, nil
}

// bearerTransport adds "Authorization: Bearer key" to requests for one
// origin.
type bearerTransport struct {
	base         http.RoundTripper
	scheme, host string
	key          string
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == b.scheme && r.URL.Host == b.host {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.base.RoundTrip(r)
}

// routerHTTP is the client for requests that may go to the router: the
// keyed one once the router runs, else the runner's.
func (tr *trialRun) routerHTTP() *http.Client {
	if tr.viaRouter != nil {
		return tr.viaRouter
	}
	return tr.client
}
