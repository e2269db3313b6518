// Package trials is the trial spec model: strict YAML decoding, validation
// with errors that name their path and line, defaults, and sweep expansion:
// the cartesian matrix (matrix.go) crossed with named variants of linked
// overrides (variants.go); trials that run the same after defaults are
// marked as repeats (same.go).
//
// It depends on no target or router implementation. Target kinds come from
// a registry passed to Load and Parse (adapter/targetkinds.All): each kind
// decodes, defaults and validates its own section. The router section is
// router/routerconfig's Config, a leaf. Every section validates itself in
// one style (package trials/field).
package trials
