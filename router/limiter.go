package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// limiter is the router's backpressure: at most max requests are being
// routed at once (a hard limit held until the response ends, unlike
// vllm-router's token bucket, whose tokens return when SSE headers are
// sent); up to queueSize more wait in FIFO order for at most timeout.
type limiter struct {
	sem       *semaphore.Weighted // nil: unlimited
	queueSize int64
	timeout   time.Duration
	waiting   atomic.Int64
	admitted  atomic.Int64
}

func newLimiter(maxInFlight, queueSize int, timeout time.Duration) *limiter {
	l := &limiter{queueSize: int64(queueSize), timeout: timeout}
	if maxInFlight > 0 {
		l.sem = semaphore.NewWeighted(int64(maxInFlight))
	}
	return l
}

var errClientGone = errors.New("client went away")

// acquire admits one request or explains why not (an *apiError, or
// errClientGone). After success, release must be called exactly once.
func (l *limiter) acquire(ctx context.Context) error {
	if l.sem == nil {
		l.admitted.Add(1)
		return nil
	}
	if l.sem.TryAcquire(1) { // fails while others queue: FIFO is kept
		l.admitted.Add(1)
		return nil
	}
	if l.waiting.Add(1) > l.queueSize {
		l.waiting.Add(-1)
		return newAPIError(http.StatusTooManyRequests, ErrTypeQueueFull,
			fmt.Sprintf("router at its in-flight limit with %d requests queued", l.queueSize))
	}
	qctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	err := l.sem.Acquire(qctx, 1)
	l.waiting.Add(-1)
	switch {
	case err == nil:
		l.admitted.Add(1)
		return nil
	case ctx.Err() != nil:
		return errClientGone
	}
	return newAPIError(http.StatusRequestTimeout, ErrTypeQueueTimeout,
		fmt.Sprintf("waited %s in the router queue for a free slot", l.timeout))
}

// release ends one admission.
func (l *limiter) release() {
	l.admitted.Add(-1)
	if l.sem != nil {
		l.sem.Release(1)
	}
}
