package router

import "github.com/autoinfer/autoinfer/router/routerconfig"

// Config is the router's configuration. It lives in router/routerconfig, a
// leaf that trial specs validate without importing the router; these
// aliases are its names as router code and the CLI write them.
// docs/router.md tabulates the defaults.
type Config = routerconfig.Config

// RetryConfig is Config's retry section.
type RetryConfig = routerconfig.RetryConfig

// CircuitBreakerConfig is Config's circuit-breaker section.
type CircuitBreakerConfig = routerconfig.CircuitBreakerConfig

// HealthCheckConfig is Config's health-check section.
type HealthCheckConfig = routerconfig.HealthCheckConfig

// Load signals power_of_two and least_loaded compare.
const (
	LoadSignalInFlight      = routerconfig.LoadSignalInFlight
	LoadSignalInFlightQueue = routerconfig.LoadSignalInFlightQueue
)

// DefaultConfig returns the documented defaults with no workers.
func DefaultConfig() Config { return routerconfig.Default() }
