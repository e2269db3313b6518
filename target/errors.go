package target

import (
	"fmt"
	"strings"
)

// StartupError says a worker never became ready: it exited, or its health
// endpoint did not answer 200 in time. Every target returns it, so the trial
// runner can classify the failure (errors.As) without knowing the target.
type StartupError struct {
	Worker Worker
	// Reason is one line: "exited with exit status 1", "not healthy after
	// 30s".
	Reason string
	// LogTail is the end of the worker's output when the target captured it.
	LogTail string
	// Err is the underlying cause (the last health probe's error, the exit
	// status), when there is one.
	Err error
}

func (e *StartupError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "worker %s: %s", e.Worker, e.Reason)
	// A typed cause whose text is the reason (the kubernetes target's) is
	// not repeated.
	if e.Err != nil && e.Err.Error() != e.Reason {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.LogTail != "" {
		src := e.Worker.LogPath
		if src == "" {
			src = "its output"
		}
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", src, strings.TrimRight(e.LogTail, "\n"))
	}
	return b.String()
}

func (e *StartupError) Unwrap() error { return e.Err }
