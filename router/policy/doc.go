// Package policy holds the router's worker-selection policies behind one
// small interface. A policy sees only candidates (workers, or data-parallel
// ranks of workers, that are healthy and whose circuit admits traffic) with
// their loads, and a description of the request; it never touches the
// network. Randomness is injected, and cache_aware uses a logical clock, so
// every policy is deterministic under a seeded source.
//
// Registration is explicit: New maps a name to a constructor, and Names lists
// them for configuration validation. A conformance test runs one contract
// against every registered policy.
package policy
