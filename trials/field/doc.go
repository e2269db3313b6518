// Package field is the one validation style of autoinfer's configuration:
// every section (a trial spec, the router config, a target kind's options)
// has a Validate() error method that checks every field and returns all
// problems joined with errors.Join, each an *Error that names the field by
// its YAML path ("router.retry.max_retries: must be ≥ 1 (got 0)").
//
// The trial spec parser finds each *Error's path in the YAML document, so
// a problem found by a section's own Validate still points at its line.
// The package is a leaf (standard library only): sections validate
// themselves without pulling in anything else.
package field
