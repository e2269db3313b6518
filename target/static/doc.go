// Package static is the target for workers that already run elsewhere: it
// is given their URLs per role, checks that each one is healthy within a
// bounded wait, and never starts or stops anything.
package static
