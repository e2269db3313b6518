package router

import "github.com/autoinfer/autoinfer/router/routerconfig"

// The configuration lives in router/routerconfig, a leaf that trial specs
// validate without importing the router; these are its names as router
// code and the CLI write them. docs/router.md tabulates the defaults.
type (
	Config               = routerconfig.Config
	RetryConfig          = routerconfig.RetryConfig
	CircuitBreakerConfig = routerconfig.CircuitBreakerConfig
	HealthCheckConfig    = routerconfig.HealthCheckConfig
)

// Load signals power_of_two and least_loaded compare.
const (
	LoadSignalInFlight      = routerconfig.LoadSignalInFlight
	LoadSignalInFlightQueue = routerconfig.LoadSignalInFlightQueue
)

// DefaultConfig returns the documented defaults with no workers.
func DefaultConfig() Config { return routerconfig.Default() }
