// Package stale decides which earlier ledger rows a new trial invalidates,
// and says why.
package stale
