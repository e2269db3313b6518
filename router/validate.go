package router

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/autoinfer/autoinfer/router/policy"
)

// FieldError is one invalid setting. Key is the setting's YAML path
// ("router.retry.max_retries"), the name users write in specs and files.
type FieldError struct {
	Key     string
	Message string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Message }

// Validate checks every field and the cross-field rules. The error joins
// one *FieldError per problem.
func (c Config) Validate() error {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			return f.Name
		}
		return name
	})
	_ = v.RegisterValidation("policy", func(fl validator.FieldLevel) bool {
		return slices.Contains(policy.Names(), fl.Field().String())
	})

	var errs []error
	if err := v.Struct(c); err != nil {
		var ves validator.ValidationErrors
		if !errors.As(err, &ves) {
			return fmt.Errorf("validating router config: %w", err)
		}
		for _, fe := range ves {
			errs = append(errs, &FieldError{Key: yamlKey(fe.Namespace()), Message: describe(fe)})
		}
	}
	errs = append(errs, c.crossFieldErrors()...)
	errs = append(errs, c.securityErrors()...)
	return errors.Join(errs...)
}

// crossFieldErrors holds the rules a struct tag cannot express.
func (c Config) crossFieldErrors() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: "router." + key, Message: fmt.Sprintf(format, args...)})
	}
	if c.PDDisaggregation {
		for key, val := range map[string]string{"kv_connector": c.KVConnector, "prefill_policy": c.PrefillPolicy, "decode_policy": c.DecodePolicy} {
			if val == "" {
				bad(key, "required when pd_disaggregation is true")
			}
		}
		if len(c.WorkerURLs) > 0 {
			bad("worker_urls", "must be empty when pd_disaggregation is true (use prefill and decode)")
		}
		if len(c.PrefillURLs) == 0 {
			bad("prefill", "at least one prefill worker URL required when pd_disaggregation is true")
		}
		if len(c.DecodeURLs) == 0 {
			bad("decode", "at least one decode worker URL required when pd_disaggregation is true")
		}
		// A worker has one role; in both pools its per-worker metrics
		// would be exported twice (breaking /metrics) and its loads merged.
		for _, u := range c.DecodeURLs {
			if slices.Contains(c.PrefillURLs, u) {
				bad("decode", "%q is also a prefill worker; a worker serves one role", u)
			}
		}
	} else {
		set := map[string]bool{
			"kv_connector": c.KVConnector != "", "prefill_policy": c.PrefillPolicy != "", "decode_policy": c.DecodePolicy != "",
			"prefill": len(c.PrefillURLs) > 0, "decode": len(c.DecodeURLs) > 0, "routing_threshold": c.RoutingThreshold != 0,
			"prefill_timeout_secs": c.PrefillTimeoutSecs != 0, "pd_fallback_local": c.PDFallbackLocal,
		}
		for _, key := range slices.Sorted(maps.Keys(set)) {
			if set[key] {
				bad(key, "only allowed when pd_disaggregation is true")
			}
		}
	}
	if c.HealthCheck.TimeoutSecs > c.HealthCheck.IntervalSecs && c.HealthCheck.IntervalSecs > 0 {
		bad("health_check.timeout_secs", "must not exceed health_check.interval_secs (%g)", c.HealthCheck.IntervalSecs)
	}
	return errs
}

// yamlKey turns validator's "Config.retry.max_retries" into "router.retry.max_retries".
func yamlKey(ns string) string {
	_, rest, ok := strings.Cut(ns, ".")
	if !ok {
		return "router"
	}
	return "router." + rest
}

func describe(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "required"
	case "policy":
		return fmt.Sprintf("must be one of %s (got %q)", strings.Join(policy.Names(), ", "), fe.Value())
	case "oneof":
		return fmt.Sprintf("must be one of %s (got %q)", strings.ReplaceAll(fe.Param(), " ", ", "), fe.Value())
	case "gte":
		return fmt.Sprintf("must be ≥ %s (got %v)", fe.Param(), fe.Value())
	case "gt":
		return fmt.Sprintf("must be > %s (got %v)", fe.Param(), fe.Value())
	case "lte":
		return fmt.Sprintf("must be ≤ %s (got %v)", fe.Param(), fe.Value())
	case "gtefield":
		return fmt.Sprintf("must be ≥ %s (got %v)", yamlName(fe.Param()), fe.Value())
	case "http_url":
		return fmt.Sprintf("must be an http(s) URL (got %q)", fe.Value())
	case "unique":
		return "must not list the same URL twice"
	case "startswith":
		return fmt.Sprintf("must start with %q (got %q)", fe.Param(), fe.Value())
	case "hostname_rfc1123|ip":
		return fmt.Sprintf("must be a host name or IP address (got %q)", fe.Value())
	}
	return fmt.Sprintf("fails %q (got %v)", fe.Tag(), fe.Value())
}

// yamlName maps the Go field names validator reports in cross-field tags.
func yamlName(field string) string {
	if f, ok := reflect.TypeFor[RetryConfig]().FieldByName(field); ok {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		return name
	}
	return field
}
