package router

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/h1"
	"github.com/autoinfer/autoinfer/router/policy"
)

// Router is one embedded router: its worker pool, policy, reliability
// machinery and metrics. Build it with New, run it with Serve (or mount
// Handler), and read its exact loads with Loads.
type Router struct {
	cfg    Config
	log    *slog.Logger
	reg    *prometheus.Registry
	m      *metrics
	now    func() time.Time
	rnd    *policy.LockedRand
	client *http.Client
	// upstream is client's transport: attempts use it directly, without
	// http.Client's per-request copies of the headers and URL for
	// redirects, which the router never follows.
	upstream http.RoundTripper
	limiter  *limiter

	ids    *requestIDs // for requests that come without one
	keys   keyring     // API and admin keys
	pass   passthrough // unnamed paths that reach workers
	bodies *bodyBudget // max_body_memory
	runs   *runSeries  // per-run series, capped

	pool      *Pool         // collocated workers
	anyWorker policy.Policy // picks for GET /v1/models
	pools     []*Pool       // every pool, for health checks and metrics
	pd        *pdRouter     // prefill/decode mode; nil when collocated
	kv        *kvFeed       // KV events for precise_prefix (kvevents.go)
	rcpt      receipts      // route receipts (receipt.go)

	reqIDHeaders []string // request_id_headers, resolved

	handler http.Handler
	active  sync.WaitGroup            // running handlers, waited for on shutdown
	front   atomic.Pointer[h1.Server] // the server Serve runs, once it runs
	serving atomic.Bool

	// seed derives the random streams (policy.NewStream): rnd, the retry
	// jitter's, and one per policy NewPolicy builds (one per pool).
	seed     uint64
	policies int
}

// Option customises New.
type Option func(*options)

type options struct {
	log     *slog.Logger
	now     func() time.Time
	seed    *uint64
	dial    Dialer
	secrets Secrets
	// receipts hears every request's route receipt (WithReceipts).
	receipts func(ReceiptRecord)
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock replaces the wall clock used by circuit breakers. Tests whose
// workers cannot run inside a testing/synctest bubble (simulated engines on
// real sockets) move a breaker's open period with it.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Dialer opens connections to workers; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// WithDialer makes every connection to a worker — requests, health checks,
// queue scrapes — go through d instead of TCP. Tests pass an in-memory
// network (routertest.Network) so that a router, its workers and its clients
// run together inside a testing/synctest bubble, where real sockets would
// keep the fake clock from advancing.
func WithDialer(d Dialer) Option { return func(o *options) { o.dial = d } }

// WithSeed makes policies and retry jitter draw from a source seeded with
// seed, so runs are reproducible.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = &seed } }

// New validates cfg and builds a router over cfg.WorkerURLs.
func New(cfg Config, opts ...Option) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("router config: %w", err)
	}
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now,
		dial: &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
	for _, opt := range opts {
		opt(&o)
	}
	keys, err := resolveSecrets(cfg.SecurityConfig, o.secrets)
	if err != nil {
		return nil, fmt.Errorf("router keys: %w", err)
	}
	seed := rand.Uint64()
	if o.seed != nil {
		seed = *o.seed
	}
	var transport http.RoundTripper = newTransport(o.dial)
	if keys.WorkerAPIKey != "" {
		transport = &workerAuth{base: newTransport(o.dial), header: "Bearer " + keys.WorkerAPIKey}
	}
	r := &Router{
		cfg:      cfg,
		log:      o.log,
		reg:      prometheus.NewRegistry(), // one per router: several share a process
		now:      o.now,
		seed:     seed,
		rnd:      policy.NewStream(seed, "retry"),
		client:   &http.Client{Transport: transport, CheckRedirect: noRedirects},
		upstream: transport,
		limiter:  newLimiter(cfg.MaxConcurrentRequests, cfg.QueueSize, secs(cfg.QueueTimeoutSecs)),
		ids:      newRequestIDs(),
		keys:     newKeyring(keys),
		pass:     newPassthrough(cfg.PassthroughRoutes),
		bodies:   newBodyBudget(cfg.MaxBodyMemory, cfg.QueueSize, secs(cfg.QueueTimeoutSecs)),
		rcpt:     receipts{on: o.receipts != nil, fn: o.receipts},
	}
	// Canonical once here, so each request looks them up without
	// canonicalising (http.Header's own keys are canonical).
	for _, h := range cfg.ResolvedRequestIDHeaders() {
		r.reqIDHeaders = append(r.reqIDHeaders, textproto.CanonicalMIMEHeaderKey(h))
	}
	r.m = newMetrics(r.reg)
	r.runs = newRunSeries(r.m, cfg.MaxRunIDs)
	if err := r.reg.Register(newStateCollector(r)); err != nil {
		return nil, fmt.Errorf("registering router metrics: %w", err)
	}
	r.kv = newKVFeed(cfg, r.log)
	if err := r.reg.Register(newKVCollector(r.kv)); err != nil {
		return nil, fmt.Errorf("registering KV event metrics: %w", err)
	}
	if err := r.reg.Register(newSLOCollector(r)); err != nil {
		return nil, fmt.Errorf("registering SLO metrics: %w", err)
	}
	pol, err := r.NewPolicy(cfg.Policy)
	if err != nil {
		return nil, err
	}
	r.pool = r.AddPool("default", pol)
	if r.anyWorker, err = policy.New(policy.LeastLoaded, policy.Params{}, nil); err != nil {
		return nil, err
	}
	for _, u := range cfg.WorkerURLs {
		r.pool.Add(u)
	}
	if cfg.PDDisaggregation {
		if r.pd, err = r.newPD(); err != nil {
			return nil, err
		}
	}
	r.handler = r.routes()
	return r, nil
}

// NewPolicy builds a named policy with the router's parameters and a
// random stream of its own, derived from the router's seed and the order
// the policies are built in (the default pool's, then PD's prefill and
// decode pools'), so one pool's draws or a retry never shift another
// pool's picks. It must be called before Serve.
func (r *Router) NewPolicy(name string) (policy.Policy, error) {
	r.policies++
	return policy.New(name, policy.Params{
		CacheThreshold:      r.cfg.CacheThreshold,
		BalanceAbsThreshold: r.cfg.BalanceAbsThreshold,
		BalanceRelThreshold: r.cfg.BalanceRelThreshold,
		MaxTreeSize:         r.cfg.MaxTreeSize,
		Blocks:              r.kv.idx,
		Scorers:             r.cfg.PolicyScorers(),
	}, policy.NewStream(r.seed, "policy/"+strconv.Itoa(r.policies)))
}

// AddPool creates a pool choosing with pol whose workers get health checks,
// circuits and metrics. It must be called before Serve.
func (r *Router) AddPool(name string, pol policy.Policy) *Pool {
	p := NewPool(name, pol, r.cfg.IntraNodeDataParallelSize, r.newBreaker)
	r.pools = append(r.pools, p)
	return p
}

func (r *Router) newBreaker(url string) *Breaker {
	return NewBreaker(r.cfg.CircuitBreaker, r.now, func(from, to BreakerState) {
		r.m.cbTransitions.WithLabelValues(url, from.String(), to.String()).Inc()
		r.log.Info("circuit changed", "worker", url, "from", from.String(), "to", to.String())
	})
}

// Handler serves every route. Background work (health checks, eviction,
// load scraping) runs only under Serve.
func (r *Router) Handler() http.Handler { return r.handler }

// Registry is where the router's metrics live (GET /metrics serves it).
func (r *Router) Registry() *prometheus.Registry { return r.reg }

// Pool returns the collocated worker pool.
func (r *Router) Pool() *Pool { return r.pool }

// Loads returns the exact in-flight count per worker URL over every pool
// (also served as GET /get_loads). Removed workers still draining appear
// until their last attempt ends.
func (r *Router) Loads() map[string]int64 {
	out := map[string]int64{}
	for _, p := range r.pools {
		for url, n := range p.Loads() {
			out[url] += n
		}
	}
	return out
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// newTransport dials workers directly (never through an environment proxy)
// and keeps enough idle connections for high-concurrency trials. Plain
// HTTP goes through router/h1, which does each round trip on the caller's
// goroutine; https and unusual requests through net/http's Transport.
func newTransport(d Dialer) *h1.Transport {
	std := &http.Transport{
		Proxy:               nil,
		DialContext:         d.DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: maxIdlePerWorker,
		IdleConnTimeout:     idleConnTimeout,
		DisableCompression:  true, // relay bytes as the worker sent them
	}
	return h1.New(h1.Options{
		Dial:           d,
		Fallback:       std,
		MaxIdlePerHost: maxIdlePerWorker,
		IdleTimeout:    idleConnTimeout,
		// A 2k-token prompt with its headers goes out in one write (a
		// 4 KiB buffer needs three system calls for it).
		WriteBufferSize: 16 << 10,
	})
}

// Connections kept to each worker between requests, and for how long.
const (
	maxIdlePerWorker = 1024
	idleConnTimeout  = 90 * time.Second
)
