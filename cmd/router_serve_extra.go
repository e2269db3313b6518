package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/autoinfer/autoinfer/router"
)

// routerLogFile is the file --log-dir writes.
const routerLogFile = "autoinfer-router.log"

// routerLogger logs to stderr and, with a log directory, also to
// routerLogFile in it (appended). The returned func closes the file.
func routerLogger(stderr io.Writer, dir string, level slog.Level) (*slog.Logger, func(), error) {
	out, closeFn := stderr, func() {}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, usageErr("--log-dir: %v", err)
		}
		f, err := os.OpenFile(filepath.Join(dir, routerLogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, usageErr("--log-dir: %v", err)
		}
		out, closeFn = io.MultiWriter(stderr, f), func() { _ = f.Close() }
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})), closeFn, nil
}

// serveWithMetricsListener serves r on ln and its metrics alone on
// metricsLn until ctx is done; the metrics server stops when the router
// has stopped.
func serveWithMetricsListener(ctx context.Context, r *router.Router, ln, metricsLn net.Listener) error {
	srv := &http.Server{Handler: r.MetricsHandler(), ReadHeaderTimeout: 30 * time.Second}
	metricsDone := make(chan error, 1)
	go func() { metricsDone <- srv.Serve(metricsLn) }()
	serveErr := r.Serve(ctx, ln)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), router.ShutdownGrace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	mErr := <-metricsDone
	if errors.Is(mErr, http.ErrServerClosed) {
		mErr = nil
	}
	if serveErr != nil || mErr != nil {
		return withCode(ExitInfra, errors.Join(serveErr, wrapIf("metrics listener", mErr)))
	}
	return nil
}

func wrapIf(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
