package router

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// ShutdownGrace is how long Serve lets in-flight responses finish after its
// context is cancelled before it cuts them off.
const ShutdownGrace = 10 * time.Second

// Serve serves on ln until ctx is done, then shuts down gracefully: it stops
// accepting, lets responses in flight finish for up to ShutdownGrace,
// cancels the rest and returns once every goroutine it started has stopped.
// Serve may be called once.
func (r *Router) Serve(ctx context.Context, ln net.Listener) error {
	if !r.serving.CompareAndSwap(false, true) {
		return errors.New("router: Serve called twice")
	}
	bg, stopBG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.healthLoop(bg) })
	wg.Go(func() { r.evictionLoop(bg) })
	if r.cfg.LoadSignal == LoadSignalInFlightQueue {
		wg.Go(func() { r.loadLoop(bg) })
	}

	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	srv := &http.Server{
		Handler:           r.handler,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
		shCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		if err := srv.Shutdown(shCtx); err != nil {
			cancelReqs()
			_ = srv.Close()
		}
		cancel()
		<-errc
	case serveErr = <-errc:
		cancelReqs()
		_ = srv.Close()
	}
	cancelReqs()
	r.active.Wait()
	stopBG()
	wg.Wait()
	if t, ok := r.client.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving router: %w", serveErr)
	}
	return nil
}

// tick runs f every interval until ctx is done.
func tick(ctx context.Context, interval time.Duration, f func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}
