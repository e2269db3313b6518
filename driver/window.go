package driver

import "context"

// Window marks the measured window for a caller that snapshots the target
// around it (the trial runner reads the workers' counters at both edges,
// so warm-up traffic never counts in its figures).
type Window struct {
	// Begin runs after the warm-up has finished, right before the first
	// measured request is scheduled; it gets the warm-up's outcome.
	Begin func(ctx context.Context, warmup WarmupOutcome)
	// End runs right after the last measured request has finished.
	End func(ctx context.Context)
}

// WarmupOutcome is what the warm-up sent and how much of it failed (the
// ready check counts when it was the first warm-up request).
type WarmupOutcome struct {
	Sent   int
	Failed int
	// ErrorTypes counts the failed warm-up requests by error type.
	ErrorTypes map[string]int
}

// WithWindow calls w's hooks at the edges of the measured window. They run
// on Run's goroutine: the window starts only when Begin returns, and Run
// returns only after End.
func WithWindow(w Window) Option { return func(o *options) { o.window = w } }
