// Package failure is the closed set of typed trial failures and the rules
// that classify what a trial observed into one of them.
package failure
