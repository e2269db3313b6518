package driver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// readyRetryInterval is the pause between ready-check attempts while the
// server is not up yet (nothing answers).
const readyRetryInterval = 250 * time.Millisecond

// NotReadyError is a failed ready check: the server refused the check
// request with a 4xx (a wrong model, path or key: retrying cannot help), or
// no attempt succeeded within the ready-check timeout. Message is the
// server's own error message, or the last transport error.
type NotReadyError struct {
	Status  int    // HTTP status of the last answer; 0 without one
	Type    string // the server's error type, or the driver's
	Message string
	// TimedOut is set when attempts kept failing until the timeout.
	TimedOut time.Duration
}

func (e *NotReadyError) Error() string {
	if e.TimedOut > 0 {
		return fmt.Sprintf("server not ready: no successful answer within %v (last: %s: %s)", e.TimedOut, e.what(), e.Message)
	}
	return fmt.Sprintf("server refused the ready check request: %s: %s", e.what(), e.Message)
}

func (e *NotReadyError) what() string {
	if e.Status == 0 {
		return e.Type
	}
	return fmt.Sprintf("HTTP %d %s", e.Status, e.Type)
}

// readyCheck sends the ready request before anything else, as vllm bench
// serve's initial test run does, and returns nil once the server answers:
//   - a success: ready;
//   - a 4xx: a wrong model, path or key that no retry mends: NotReadyError
//     with the server's message;
//   - a 5xx or an error inside the stream: the server is up and answering,
//     and what it answers is a result of the run (a saturated router's 503
//     is RouterPoolExhausted, not unreadiness), so the run goes on;
//   - nothing (refused, reset, no answer in time): retried every
//     readyRetryInterval until cfg.ReadyCheckTimeout, then NotReadyError.
//
// The verdict is known from the status line: a 200 is ready whatever its
// stream holds. So the check returns as soon as a 200 arrives and its
// stream is read to the end in the background, as the warm-up request it
// is; done closes when it has ended, and the caller must wait for it before
// measuring. The rest of the warm-up thus starts one generation earlier.
//
// vllm retries every failure until its timeout; autoinfer retries only
// while nothing answers, so a live server that sheds load is measured.
func readyCheck(ctx context.Context, cfg Config, client *http.Client, url string, req Request, header http.Header) (done <-chan struct{}, err error) {
	deadline := time.Now().Add(cfg.ReadyCheckTimeout)
	if req.Session != "" {
		header.Set(cfg.SessionHeader, req.Session)
	}
	if cfg.RunIDHeader != NoHeader {
		header.Set(cfg.RunIDHeader, cfg.RunID+WarmupRunIDSuffix)
	}
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		attempt := deadline
		if t := time.Now().Add(cfg.Timeout); t.Before(attempt) {
			attempt = t
		}
		actx, cancel := context.WithDeadline(ctx, attempt)
		x, events := send(actx, client, url, req.Body, header, time.Now)
		if events != nil {
			return readInBackground(actx, cancel, x, events), nil
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("ready check: %w", ctx.Err())
		case x.status >= 400 && x.status < 500:
			return nil, &NotReadyError{Status: x.status, Type: x.errType, Message: x.detail}
		case x.status != 0:
			return closed(), nil // a live server's 5xx: measured, not a readiness problem
		}
		if !time.Now().Add(readyRetryInterval).Before(deadline) {
			msg := x.detail
			if msg == "" {
				msg = x.errMsg
			}
			return nil, &NotReadyError{Status: x.status, Type: x.errType, Message: msg, TimedOut: cfg.ReadyCheckTimeout}
		}
		retry.Reset(readyRetryInterval)
		select {
		case <-retry.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("ready check: %w", ctx.Err())
		}
	}
}

// readInBackground reads the rest of a ready answer's stream, then closes
// it and cancels its context; the channel closes when it is done.
func readInBackground(ctx context.Context, cancel context.CancelFunc, x *exchange, body io.ReadCloser) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		defer body.Close()
		x.readEvents(ctx, body, time.Now)
	}()
	return done
}

func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
