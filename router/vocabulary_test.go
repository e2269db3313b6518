package router

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
)

// Issue 35, acceptance 8: one error vocabulary. Each malformed request is
// sent to a router in front of a simulated engine and to the engine
// itself; both answer the same status and the same vLLM `type`, and no
// body names a Go type.
func TestErrorVocabularyRouterMatchesEngine(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	e := loopback(t)
	w := e.simWorker(sim.Options{Limits: sim.Limits{MaxBodyBytes: limit}})
	cfg := testConfig("round_robin", w.URL)
	cfg.MaxPayloadSize = limit
	_, base := e.router(cfg)

	deep := strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40)
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		typ                      string
	}{
		{"not JSON", http.MethodPost, "/v1/completions", `{"model": "m", `, 400, ErrTypeInvalidRequest},
		{"JSON array", http.MethodPost, "/v1/completions", `[{"model":"m","prompt":"x"}]`, 400, ErrTypeInvalidRequest},
		{"JSON string", http.MethodPost, "/v1/completions", `"prompt"`, 400, ErrTypeInvalidRequest},
		{"JSON number", http.MethodPost, "/v1/chat/completions", `42`, 400, ErrTypeInvalidRequest},
		{"empty body", http.MethodPost, "/v1/completions", ``, 400, ErrTypeInvalidRequest},
		{"trailing data", http.MethodPost, "/v1/completions", `{"model":"m","prompt":"x"} {}`, 400, ErrTypeInvalidRequest},
		{"prompt nested too deep", http.MethodPost, "/v1/completions", `{"model":"m","prompt":` + deep + `}`, 400, ErrTypeInvalidRequest},
		{"wrong-typed field", http.MethodPost, "/v1/completions", `{"model":"m","prompt":"x","max_tokens":"ten"}`, 400, ErrTypeInvalidRequest},
		{"unknown model", http.MethodPost, "/v1/completions", `{"model":"gpt-9","prompt":"x"}`, 404, ErrTypeNotFound},
		{"wrong method", http.MethodGet, "/v1/completions", ``, 405, ErrTypeMethodNotAllowed},
		{"wrong method, chat", http.MethodPut, "/v1/chat/completions", `{}`, 405, ErrTypeMethodNotAllowed},
		{"unknown path", http.MethodPost, "/v1/nothing", `{}`, 404, ErrTypeNotFound},
		{"body too large", http.MethodPost, "/v1/completions", `{"model":"m","prompt":"` + strings.Repeat("a", limit) + `"}`, 413, ErrTypePayloadTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, target := range []struct{ name, url string }{{"router", base}, {"engine", w.URL}} {
				res := e.Call(context.Background(), c.method, target.url+c.path, c.body)
				if res.Status != c.status || res.ErrorType() != c.typ {
					t.Errorf("%s: %d %q (%.300s), want %d %q", target.name, res.Status, res.ErrorType(), res.Body, c.status, c.typ)
				}
				for _, goName := range []string{"Go value", "Go struct", "json.RawMessage", "map[string]", "router.", "sim."} {
					if strings.Contains(res.Body, goName) {
						t.Errorf("%s: body names a Go type (%q): %.300s", target.name, goName, res.Body)
					}
				}
			}
		})
	}
}
