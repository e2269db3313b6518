package failure

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// ProcessStart describes a router that did not become live: the error the
// launcher got, the exit status if the process exited (-1 if it did not, or
// was never started), and the tail of its stderr.
type ProcessStart struct {
	Err      error
	ExitCode int
	Stderr   string
}

// Reason classifies why a router did not start. Order matters: a
// missing binary never produced output, a bind failure is recognisable in
// any output, a usage exit (status 2) or flag complaint is a bad flag, and a
// process still running when the deadline passed is a timeout.
func (p ProcessStart) Reason() StartupReason {
	text := strings.ToLower(p.Stderr)
	if p.Err != nil {
		text += " " + strings.ToLower(p.Err.Error())
	}
	switch {
	case errors.Is(p.Err, exec.ErrNotFound), errors.Is(p.Err, fs.ErrNotExist), errors.Is(p.Err, fs.ErrPermission):
		return ReasonBinaryMissing
	case errors.Is(p.Err, syscall.EADDRINUSE), strings.Contains(text, "address already in use"):
		return ReasonPortInUse
	case p.ExitCode == 2, strings.Contains(text, "unknown flag"), strings.Contains(text, "invalid argument"),
		strings.Contains(text, "unknown shorthand flag"), strings.Contains(text, "flag provided but not defined"):
		return ReasonFlagInvalid
	case errors.Is(p.Err, context.DeadlineExceeded), errors.Is(p.Err, os.ErrDeadlineExceeded):
		return ReasonTimeout
	case p.ExitCode >= 0:
		return ReasonExited
	}
	return ReasonTimeout
}

func (p ProcessStart) failure() RouterStartupFailed {
	detail := strings.TrimSpace(p.Stderr)
	if p.Err != nil {
		detail = strings.TrimSpace(p.Err.Error() + "; " + detail)
		detail = strings.TrimSuffix(detail, ";")
	}
	return RouterStartupFailed{Reason: p.Reason(), Detail: detail}
}
