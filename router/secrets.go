package router

import (
	"errors"
	"os"

	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Secrets are the keys themselves, for callers that hold them (the CLI's
// --api-key flags); they take precedence over the *_env settings and are
// never part of Config, so they never reach a ledger row.
type Secrets struct {
	APIKey, AdminAPIKey, WorkerAPIKey string
}

// WithSecrets passes keys directly instead of through environment variables.
func WithSecrets(s Secrets) Option { return func(o *options) { o.secrets = s } }

// resolveSecrets fills each key from s, else from the variable the config
// names; a named variable that is unset or empty is an error, so a router
// meant to be keyed never starts open.
func resolveSecrets(cfg routerconfig.SecurityConfig, s Secrets) (Secrets, error) {
	var errs []error
	get := func(direct *string, key, name string) {
		if *direct != "" || name == "" {
			return
		}
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			errs = append(errs, field.Errorf("router."+key, "environment variable %s is unset or empty", name))
			return
		}
		*direct = v
	}
	get(&s.APIKey, "api_key_env", cfg.APIKeyEnv)
	get(&s.AdminAPIKey, "admin_api_key_env", cfg.AdminAPIKeyEnv)
	get(&s.WorkerAPIKey, "worker_api_key_env", cfg.WorkerAPIKeyEnv)
	return s, errors.Join(errs...)
}
