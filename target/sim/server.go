package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrCrashed is returned by Serve when a Crash fault stopped the server.
var ErrCrashed = errors.New("sim: crash fault injected")

// shutdownGrace bounds how long Serve waits for connections to close after
// its context is done.
const shutdownGrace = 5 * time.Second

// Server is one simulated vLLM server: an HTTP front end over
// data_parallel_size engine ranks.
type Server struct {
	cfg     config
	m       *metrics
	ranks   []*engine
	mux     *http.ServeMux
	faults  atomic.Pointer[Faults]
	crash   chan struct{}
	load    atomic.Int64  // in-flight generation requests (GET /load)
	rr      atomic.Uint64 // round-robin over ranks
	created int64
	serving atomic.Bool
	kv      kvChannel
	kvPub   kvPublisher // KV events (enable_kv_cache_events)
	links   links       // decode role: one per prefill server pulled from
	id      string
	logger  *slog.Logger
	observe atomic.Pointer[func(RequestTiming)] // ObserveRequests
}

// New validates opts and builds a server. Nothing runs until Serve.
func New(opts Options) (*Server, error) {
	cfg, err := resolve(opts)
	if err != nil {
		return nil, fmt.Errorf("sim options: %w", err)
	}
	s := &Server{cfg: cfg, crash: make(chan struct{}, 1), created: time.Now().Unix(),
		id: strconv.FormatUint(rand.Uint64(), 16), logger: cfg.logger, kvPub: newKVPublisher()}
	s.m = newMetrics(&s.cfg)
	for r := range cfg.ranks {
		e := newEngine(&s.cfg, s.m.ranks[r], fmt.Sprintf("sim-%s-dp%d", s.id, r))
		if cfg.kvEvents.Enabled() {
			e.enableKVEvents(&kvEventLog{srv: s, rank: dpRankOf(r, cfg.ranks)})
		}
		s.ranks = append(s.ranks, e)
	}
	s.faults.Store(cfg.initialFault.clone())
	s.mux = s.routes(opts.EnableAdmin)
	return s, nil
}

// methodOf is the method each served path takes (the patterns below).
var methodOf = map[string]string{
	"/v1/completions": http.MethodPost, "/v1/chat/completions": http.MethodPost, "/v1/models": http.MethodGet,
	"/health": http.MethodGet, "/metrics": http.MethodGet, "/tokenize": http.MethodPost, "/detokenize": http.MethodPost,
	"/load": http.MethodGet, "/reset_prefix_cache": http.MethodPost,
}

func (s *Server) routes(admin bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.handleGenerate(false))
	mux.HandleFunc("POST /v1/chat/completions", s.handleGenerate(true))
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /detokenize", s.handleDetokenize)
	mux.HandleFunc("GET /load", s.handleLoad)
	mux.HandleFunc("POST /reset_prefix_cache", s.handleResetPrefixCache)
	s.adminRoutes(mux, admin)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A served path asked with another method is 405, as vLLM answers.
		if allow, ok := methodOf[r.URL.Path]; ok {
			w.Header().Set("Allow", allow)
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: typeMethodNotAllowed, msg: r.Method + " not allowed on " + r.URL.Path + "; use " + allow})
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, typ: typeNotFound, msg: "no route for " + r.Method + " " + r.URL.Path})
	})
	return mux
}

// Handler serves the HTTP API. Generation requests need Serve running:
// without the engine loop they wait until their client gives up.
func (s *Server) Handler() http.Handler { return s.mux }

// SetFaults replaces the fault injection state. An invalid f is rejected
// by POST /admin/faults; here it is the caller's contract to pass Validate.
// The server keeps its own copy, so the caller may reuse f's map.
func (s *Server) SetFaults(f Faults) {
	s.faults.Store(f.clone())
	if f.Crash {
		select {
		case s.crash <- struct{}{}:
		default:
		}
	}
}

// Faults returns a copy of the current fault injection state.
func (s *Server) Faults() Faults { return *s.faults.Load().clone() }

// Model is the served model name.
func (s *Server) Model() string { return s.cfg.model }

// KVPort is the KV side-channel port of a prefill server while it serves
// (0 otherwise).
func (s *Server) KVPort() int { return s.kv.port() }

// Serve runs the engine ranks and the HTTP server on ln until ctx is done
// (then shuts down and returns nil) or a Crash fault (returns ErrCrashed).
// A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("sim: Serve called twice")
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel below: every goroutine started here has ended
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.listenKVEvents(ctx, &wg); err != nil {
		return err
	}
	for _, e := range s.ranks {
		wg.Go(func() { e.run(ctx) })
	}
	if s.cfg.role == RolePrefill {
		if err := s.kv.listen(ctx, &wg, s); err != nil {
			return err
		}
	}
	var fresh freshConns
	hs := &http.Server{
		Handler:           s.refuseUnlessAdmin(s.bounded(s.mux)),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: s.cfg.limits.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.limits.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		ConnState:         fresh.track,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		cancel()
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer scancel()
		fresh.closeAll()
		err := hs.Shutdown(sctx)
		<-errc
		if err != nil {
			return fmt.Errorf("sim: shutting down: %w", err)
		}
		return nil
	case <-s.crash:
		cancel()
		hs.Close()
		<-errc
		return ErrCrashed
	case err := <-errc:
		cancel()
		return fmt.Errorf("sim: serving: %w", err)
	}
}

// freshConns are the connections that have not sent a request yet. A
// graceful shutdown waits up to 5 s for them (net/http treats them as idle
// only then, Go issue 22682), although nothing is in flight on them: a client
// pool that dialled one more connection than it used would hold every
// shutdown that long. Once shutdown starts they are closed at once, and so is
// every one accepted later.
type freshConns struct {
	mu      sync.Mutex
	m       map[net.Conn]struct{}
	closing bool
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case st == http.StateNew && f.closing:
		_ = c.Close()
	case st == http.StateNew:
		if f.m == nil {
			f.m = map[net.Conn]struct{}{}
		}
		f.m[c] = struct{}{}
	default:
		delete(f.m, c)
	}
}

func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for c := range f.m {
		_ = c.Close()
	}
	clear(f.m)
}

// pickRank chooses the engine rank: the X-data-parallel-rank header when
// present, round-robin otherwise.
func (s *Server) pickRank(r *http.Request) (*engine, *apiError) {
	if h := r.Header.Get("X-data-parallel-rank"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n >= len(s.ranks) {
			return nil, badRequest("X-data-parallel-rank", "X-data-parallel-rank must be an integer in [0, %d), got %q", len(s.ranks), h)
		}
		return s.ranks[n], nil
	}
	if len(s.ranks) == 1 {
		return s.ranks[0], nil
	}
	return s.ranks[int(s.rr.Add(1)-1)%len(s.ranks)], nil
}
