package router

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

func TestSecurityConfigValidation(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
		secret string // must not appear in the error
	}{
		{"key pasted as a name", func(c *Config) { c.APIKeyEnv = "sk-proj.abc123" }, "router.api_key_env: must name an environment variable", "abc123"},
		{"admin key pasted", func(c *Config) { c.AdminAPIKeyEnv = "a b" }, "router.admin_api_key_env: must name", "a b"},
		{"worker key name", func(c *Config) { c.WorkerAPIKeyEnv = "9LIVES" }, "router.worker_api_key_env: must name", ""},
		{"relative pattern", func(c *Config) { c.PassthroughRoutes = []string{"tokenize"} }, "router.passthrough_routes[0]: must start with /", ""},
		{"inner star", func(c *Config) { c.PassthroughRoutes = []string{"/ok", "/v1/*/x"} }, "router.passthrough_routes[1]: * is allowed only as a final /*", ""},
		{"trailing slash", func(c *Config) { c.PassthroughRoutes = []string{"/tokenize/"} }, "router.passthrough_routes[0]: must not end with /", ""},
		{"dot dot", func(c *Config) { c.PassthroughRoutes = []string{"/v1/../admin"} }, "router.passthrough_routes[0]: must be a plain path", ""},
		{"memory under payload", func(c *Config) { c.MaxBodyMemory = c.MaxPayloadSize - 1 }, "router.max_body_memory: must be ≥ max_payload_size", ""},
		{"run ids", func(c *Config) { c.MaxRunIDs = 0 }, "router.max_run_ids: must be ≥ 1", ""},
		{"header timeout", func(c *Config) { c.ReadHeaderTimeoutSecs = 0 }, "router.read_header_timeout_secs: must be > 0", ""},
		{"body timeout", func(c *Config) { c.BodyReadTimeoutSecs = -1 }, "router.body_read_timeout_secs: must be > 0", ""},
		{"write idle", func(c *Config) { c.WriteIdleTimeoutSecs = 0 }, "router.write_idle_timeout_secs: must be > 0", ""},
		{"idle", func(c *Config) { c.IdleTimeoutSecs = 0 }, "router.idle_timeout_secs: must be > 0", ""},
		{"user info", func(c *Config) { c.WorkerURLs = []string{"http://u:pw123@h:1"} }, "router.worker_urls[0]: must not carry user info", "pw123"},
		{"token as user", func(c *Config) { c.WorkerURLs = []string{"https://tok456@h"} }, "router.worker_urls[0]: must not carry user info", "tok456"},
		{"query", func(c *Config) { c.WorkerURLs = []string{"http://h:1?k=v"} }, "router.worker_urls[0]: must not have a query", ""},
		{"empty query", func(c *Config) { c.WorkerURLs = []string{"http://h:1?"} }, "router.worker_urls[0]: must not have a query", ""},
		{"fragment", func(c *Config) { c.WorkerURLs = []string{"http://h:1#f"} }, "router.worker_urls[0]: must not have a fragment", ""},
		{"no host", func(c *Config) { c.WorkerURLs = []string{"http://:80"} }, "router.worker_urls[0]: must name a host", ""},
		{"pd urls", func(c *Config) {
			c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nixl", "random", "random"
			c.PrefillURLs, c.DecodeURLs = []string{"http://p:1"}, []string{"http://x:secret9@d:1"}
		}, "router.decode[0]: must not carry user info", "secret9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.WorkerURLs = []string{"http://127.0.0.1:1"}
			c.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Errorf("error echoes %q: %v", c.secret, err)
			}
		})
	}
	ok := DefaultConfig()
	ok.WorkerURLs = []string{"http://127.0.0.1:1", "https://gpu-0.internal:8000/prefix"}
	ok.PassthroughRoutes = []string{"/tokenize", "/v1/responses/*"}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid security settings refused: %v", err)
	}
}

// Keys come from the variables the config names (or WithSecrets, which
// wins); a named variable that is unset stops New rather than leaving the
// router open.
func TestKeysFromTheEnvironment(t *testing.T) {
	t.Setenv("AUTOINFER_TEST_API_KEY", "from-env")
	t.Setenv("AUTOINFER_TEST_EMPTY_KEY", "")
	cfg := testConfig("round_robin", "http://127.0.0.1:1")
	cfg.APIKeyEnv = "AUTOINFER_TEST_API_KEY"
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.keys.hasAPI || r.keys.authorize(authHeader("from-env"), accessClient) != nil || r.keys.authorize(authHeader("other"), accessClient) == nil {
		t.Error("the key from the environment is not the one checked")
	}
	r, err = New(cfg, WithSecrets(Secrets{APIKey: "direct"}))
	if err != nil || r.keys.authorize(authHeader("direct"), accessClient) != nil {
		t.Errorf("WithSecrets did not win over the environment: %v", err)
	}
	for _, name := range []string{"AUTOINFER_TEST_SURELY_UNSET", "AUTOINFER_TEST_EMPTY_KEY"} {
		cfg.APIKeyEnv = name
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "router.api_key_env: environment variable "+name) {
			t.Errorf("New with %s: %v, want an error naming router.api_key_env", name, err)
		}
	}
}

func authHeader(key string) map[string][]string {
	return map[string][]string{"Authorization": {"Bearer " + key}}
}

// The security keys sit directly under `router:`, decode strictly, and the
// config (what the ledger stores) holds variable names, never keys.
func TestSecurityKeysInYAMLAndJSON(t *testing.T) {
	doc := "policy: round_robin\napi_key_env: ROUTER_KEY\nadmin_api_key_env: ROUTER_ADMIN_KEY\nforward_client_auth: true\n" +
		"passthrough_routes: [/tokenize]\nmax_body_memory: 1073741824\nmax_run_ids: 8\nidle_timeout_secs: 30\n"
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIKeyEnv != "ROUTER_KEY" || cfg.AdminAPIKeyEnv != "ROUTER_ADMIN_KEY" || !cfg.ForwardClientAuth ||
		len(cfg.PassthroughRoutes) != 1 || cfg.MaxRunIDs != 8 || cfg.IdleTimeoutSecs != 30 || cfg.WriteIdleTimeoutSecs != routerconfig.DefaultWriteIdleTimeoutSecs {
		t.Errorf("decoded %+v", cfg.SecurityConfig)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]any
	_ = json.Unmarshal(raw, &flat)
	if flat["api_key_env"] != "ROUTER_KEY" || flat["max_run_ids"] != 8.0 {
		t.Errorf("JSON does not carry the security keys at the top level: %s", raw)
	}
	// An empty list turns pass-through off.
	cfg2 := DefaultConfig()
	if err := yaml.Unmarshal([]byte("passthrough_routes: []\n"), &cfg2); err != nil || len(cfg2.PassthroughRoutes) != 0 {
		t.Errorf("passthrough_routes: [] → %v (%v)", cfg2.PassthroughRoutes, err)
	}
}
