package cmd

import (
	"errors"
	"fmt"
)

// Exit statuses. They are part of the CLI contract: CI scripts branch on them.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the trial ran and failed: an assertion, SLO, baseline or quality gate
	ExitUsage       = 2 // the input is wrong: flags, spec, file paths
	ExitInfra       = 3 // the infrastructure broke: workers, router, ledger
	ExitInterrupted = 130
)

// exitError attaches an exit status to an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as bad input (exit 2).
func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// withCode marks err with an exit status; nil stays nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCode maps an error returned by a command to a process exit status.
// Unmarked errors are infrastructure errors: the safe, loud default.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitInfra
}
