// Package routerconfig is the router's configuration: the Config type (keys
// are vllm-router's CLI flag names in snake_case), its documented defaults
// and its validation. It is a leaf, apart from the policy names: trial
// specs embed a Config under `router:` and validate it without pulling in
// the router itself (its HTTP stack, its Prometheus metrics). Package
// router re-exports these names, so router code reads router.Config.
package routerconfig
