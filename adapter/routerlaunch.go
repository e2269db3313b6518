package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/trials"
)

// routerStartTimeout bounds a router's wait for liveness and a healthy worker.
const routerStartTimeout = 30 * time.Second

// runningRouter is a router launched for one trial.
type runningRouter struct {
	URL    string
	Launch string
	Config router.Config
	close  func(context.Context) error
	// receipts are the route receipts an embedded router reported.
	receipts *receiptLog
}

// MetricsURL is where the router serves its Prometheus metrics.
func (r *runningRouter) MetricsURL() string { return r.URL + "/metrics" }

// Close stops the router and waits for it.
func (r *runningRouter) Close(ctx context.Context) error { return r.close(ctx) }

// routerStartError carries what the classifier needs to name the reason.
type routerStartError struct{ start failure.ProcessStart }

func (e *routerStartError) Error() string {
	return fmt.Sprintf("router did not start (%s): %v", e.start.Reason(), e.start.Err)
}
func (e *routerStartError) Unwrap() error { return e.start.Err }

// routerConfig is the spec's router configuration with the deployment's
// workers filled in: the configuration the ledger records.
func routerConfig(spec trials.Router, dep *target.Deployment) router.Config {
	cfg := spec.Config
	cfg.Host, cfg.Port = "127.0.0.1", 0
	if cfg.PDDisaggregation {
		cfg.PrefillURLs, cfg.DecodeURLs = dep.URLs(target.Prefill), dep.URLs(target.Decode)
	} else {
		cfg.WorkerURLs = dep.URLs(target.Collocated)
	}
	return withKVEvents(cfg, dep)
}

// launchRouter starts a fresh router in front of cfg's workers, the way the
// spec says, and returns once it is live and has a healthy worker.
// workDir is called only for child routers, which need a directory for
// their config and log.
func launchRouter(ctx context.Context, spec trials.Router, cfg router.Config, binary string, workDir func() (string, error), log *slog.Logger) (*runningRouter, error) {
	if spec.Launch == trials.LaunchEmbedded || spec.Launch == "" {
		return launchEmbedded(ctx, cfg, log)
	}
	dir, err := workDir()
	if err != nil {
		return nil, err
	}
	switch spec.Launch {
	case trials.LaunchProcess:
		cfgPath := filepath.Join(dir, "router.yaml")
		b, err := yaml.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("writing router config: %w", err)
		}
		if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
			return nil, fmt.Errorf("writing router config: %w", err)
		}
		cmd := quote(binary) + " router serve --config " + quote(cfgPath) + " --host {host} --port {port}"
		return launchChild(ctx, trials.LaunchProcess, cmd, cfg, dir, log)
	case trials.LaunchExternal:
		// The binary may carry leading arguments ("autoinfer router serve").
		cmd := spec.Binary + " --host {host} --port {port}"
		for _, a := range routerArgs(cfg) {
			cmd += " " + quote(a)
		}
		return launchChild(ctx, trials.LaunchExternal, cmd, cfg, dir, log)
	}
	return nil, fmt.Errorf("router.launch: unknown mode %q", spec.Launch)
}

func launchEmbedded(ctx context.Context, cfg router.Config, log *slog.Logger) (*runningRouter, error) {
	receipts := newReceiptLog()
	r, err := router.New(cfg, router.WithLogger(log), router.WithReceipts(receipts.add))
	if err != nil {
		return nil, &routerStartError{failure.ProcessStart{Err: err, ExitCode: 2}}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, &routerStartError{failure.ProcessStart{Err: err, ExitCode: -1}}
	}
	// The router outlives ctx's cancellation only until Close: teardown
	// must still be able to drain it after Ctrl-C.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- r.Serve(sctx, ln) }()
	rr := &runningRouter{URL: "http://" + ln.Addr().String(), Launch: trials.LaunchEmbedded, Config: cfg, receipts: receipts,
		close: func(cctx context.Context) error {
			stop()
			select {
			case err := <-done:
				return err
			case <-cctx.Done():
				return fmt.Errorf("stopping embedded router: %w", cctx.Err())
			}
		}}
	if err := waitReady(ctx, probeClient(), rr.URL, done); err != nil {
		_ = rr.Close(context.WithoutCancel(ctx))
		return nil, &routerStartError{failure.ProcessStart{Err: err, ExitCode: -1}}
	}
	return rr, nil
}

func launchChild(ctx context.Context, mode, command string, cfg router.Config, workDir string, log *slog.Logger) (*runningRouter, error) {
	p, err := process.New(process.Options{Command: command, HealthPath: "/liveness", StartupTimeout: routerStartTimeout,
		StopGracePeriod: 10 * time.Second, LogDir: workDir, Logger: log})
	if err != nil {
		return nil, &routerStartError{failure.ProcessStart{Err: err, ExitCode: 2}}
	}
	dep, err := p.Provision(ctx, target.Topology{Replicas: 1, Engine: engine.Config{Model: "router"}})
	if err != nil {
		return nil, &routerStartError{startFailure(err)}
	}
	rr := &runningRouter{URL: dep.Workers[0].URL, Launch: mode, Config: cfg, close: dep.Close}
	if err := waitReady(ctx, probeClient(), rr.URL, nil); err != nil {
		_ = dep.Close(context.WithoutCancel(ctx))
		return nil, &routerStartError{failure.ProcessStart{Err: err, ExitCode: -1, Stderr: tailOf(dep)}}
	}
	return rr, nil
}

// startFailure turns a process target's startup error into what the
// failure classifier reads.
func startFailure(err error) failure.ProcessStart {
	ps := failure.ProcessStart{Err: err, ExitCode: -1}
	var se *target.StartupError
	if errors.As(err, &se) {
		ps.Stderr = se.LogTail
		// A process's exit status, or a typed cause that carries one (the
		// kubernetes target's container failures).
		var ee interface{ ExitCode() int }
		if errors.As(se.Err, &ee) {
			ps.ExitCode = ee.ExitCode()
		}
	}
	return ps
}

func tailOf(dep *target.Deployment) string {
	b, err := os.ReadFile(dep.Workers[0].LogPath)
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// probeClient sends readiness probes: one probe must not use up the start
// timeout.
func probeClient() *http.Client { return &http.Client{Timeout: 2 * time.Second} }

// waitReady polls /readiness until the router has a healthy worker. died,
// when not nil, ends the wait early if the router stopped serving.
func waitReady(ctx context.Context, client *http.Client, base string, died <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, routerStartTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readiness", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readiness answered %d", resp.StatusCode)
		}
		last = err
		select {
		case err := <-died:
			return fmt.Errorf("router stopped while starting: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("router not ready after %s: %w (last: %v)", routerStartTimeout, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// routerLoads reads GET /get_loads: the router's in-flight count per worker.
func routerLoads(ctx context.Context, client *http.Client, base string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/get_loads", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading router loads: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Workers []struct {
			Worker string  `json:"worker"`
			Load   float64 `json:"load"`
		} `json:"workers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding router loads: %w", err)
	}
	loads := make(map[string]float64, len(out.Workers))
	for _, w := range out.Workers {
		loads[w.Worker] += w.Load
	}
	return loads, nil
}

// quote single-quotes s for the process target's shell-like command template.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
