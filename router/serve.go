package router

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/router/h1"
)

// ShutdownGrace is how long Serve lets in-flight responses finish after its
// context is cancelled before it cuts them off.
const ShutdownGrace = 10 * time.Second

// Serve serves on ln until ctx is done, then shuts down gracefully: it stops
// accepting, closes connections that never sent a request, lets responses
// in flight finish for up to ShutdownGrace, cancels the rest and returns
// once every goroutine it started has stopped.
// Serve may be called once.
func (r *Router) Serve(ctx context.Context, ln net.Listener) error {
	if !r.serving.CompareAndSwap(false, true) {
		return errors.New("router: Serve called twice")
	}
	bg, stopBG := context.WithCancel(ctx)
	r.startProbing(bg)
	var wg sync.WaitGroup
	wg.Go(func() { r.healthLoop(bg) })
	wg.Go(func() { r.evictionLoop(bg) })
	r.kv.run(bg, &wg, r.log)
	if r.observes() {
		wg.Go(func() { r.latencyLoop(bg) })
	}
	if r.cfg.LoadSignal == LoadSignalInFlightQueue {
		wg.Go(func() { r.loadLoop(bg) })
	}

	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	// No whole-request read or write timeout: it would cut long streams.
	// Bodies and writes get per-request deadlines instead (body.go,
	// relay.go). The server's own body bound only backs up max_payload_size,
	// which readBody enforces with its 413 first.
	srv := &h1.Server{
		Handler:           r.handler,
		ReadHeaderTimeout: secs(r.cfg.ReadHeaderTimeoutSecs),
		IdleTimeout:       secs(r.cfg.IdleTimeoutSecs),
		MaxBodyBytes:      r.cfg.MaxPayloadSize + 1,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		Log:               r.log,
	}
	r.front.Store(srv)
	r.warnExposure(ln.Addr())
	if n := r.cfg.MaxConnections; n > 0 {
		capped := newCapListener(ln, n)
		defer capped.refusals.Wait()
		ln = capped
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
		// Connections waiting for a request, new ones included, close at
		// once; answers in progress get ShutdownGrace.
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

// warnExposure warns when the router listens beyond loopback without an API
// key: anyone who can reach the port can then use the workers.
func (r *Router) warnExposure(addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() || r.keys.hasAPI {
		return
	}
	r.log.Warn("router listens on a non-loopback address without an API key: anyone who can reach it can "+
		"run inference on every worker and read the answers, /metrics and the worker list; "+
		"set api_key_env (or --api-key), or listen on 127.0.0.1", "addr", addr.String())
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
