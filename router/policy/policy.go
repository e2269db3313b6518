package policy

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// Candidate is one routable target: a worker or one data-parallel rank of a
// worker. ID is stable for the target's lifetime ("url" or "url@rank").
type Candidate struct {
	ID string
	// InFlight is the router's exact count of attempts bound to the target.
	InFlight int64
	// Queue is the target's scraped vllm:num_requests_waiting when the load
	// signal includes it, else 0.
	Queue int64
}

// Load is the signal power_of_two and least_loaded compare.
func (c Candidate) Load() int64 { return c.InFlight + c.Queue }

// Request is what a policy may know about a request.
type Request struct {
	Model string
	// Text is the prompt text cache_aware matches against its tree.
	Text string
	// HashKey is the key consistent_hash places on its ring.
	HashKey string
	// SLO is the request's latency objective (predicted_latency).
	SLO SLO
	// Explain asks the policy for each candidate's scores and predicted
	// prefix-cache hit (Decision.Explained), for the request's route
	// receipt; without it a policy does not pay for them.
	Explain bool
}

// Outcome tells the router why a policy chose, for its metrics.
type Outcome int

// Outcomes.
const (
	OutcomeNone        Outcome = iota
	OutcomeCacheHit            // cache_aware: match above threshold
	OutcomeCacheMiss           // cache_aware: match at or below threshold, sent to least loaded
	OutcomeLoadBalance         // cache_aware: imbalance gate fired, sent to least loaded
	OutcomeSLOMet              // predicted_latency: a candidate is predicted to meet the SLO
	OutcomeSLOMissed           // predicted_latency: none is; sent to the best anyway
	OutcomeSLORefused          // predicted_latency: none is; refused (Pick reports false)
)

// Decision is a policy's choice: an index into the candidates.
type Decision struct {
	Index   int
	Outcome Outcome
	// MatchedTokens is precise_prefix's prediction of the prompt tokens the
	// chosen target serves from its prefix cache (0 from other policies).
	MatchedTokens int
	// Explained is, when the request asked (Request.Explain), each
	// candidate's scores and predicted hit, in the candidates' order
	// (nil from a policy that compares nothing but load).
	Explained []Explained
	// Receipt is the decision's route receipt, which the router (not the
	// policy) builds from Explained when the request asked for one.
	Receipt *Receipt
}

// Policy chooses one candidate per request.
//
// Contract (checked by the conformance test for every policy): Pick is safe
// for concurrent use; it returns ok=false for an empty candidate list and
// never panics; a returned Index is within range; given the same seeded
// source and the same sequence of calls it makes the same choices. Callers
// pass candidates in a stable order (sorted by ID).
type Policy interface {
	Name() string
	Pick(req Request, cands []Candidate) (d Decision, ok bool)
}

// Needs says which request fields a policy reads. The router fills in only
// what some policy of it reads: extracting the prompt text costs more than
// routing on it, so a policy that does not read the text must not pay for
// it on every request.
type Needs struct {
	Text    bool // Model and Text (cache_aware)
	HashKey bool // HashKey (consistent_hash)
	SLO     bool // SLO (predicted_latency)
	// Latency: the policy learns from the workers' observed latencies
	// (Observer), which the router then scrapes for it.
	Latency bool
}

// Needer is implemented by policies that read request fields; a policy
// without it reads none, and sees a zero Request.
type Needer interface {
	Needs() Needs
}

// Forgetter is implemented by policies that keep per-target state (the
// cache_aware tree). The router calls Forget when a target leaves the pool
// or becomes unhealthy.
type Forgetter interface {
	Forget(id string)
}

// Evicter is implemented by policies whose state needs periodic trimming;
// the router calls Evict every eviction interval.
type Evicter interface {
	Evict()
}

// Sizer reports per-target state sizes (cache_aware: characters in the tree
// held by each target), exported as vllm_router_tree_size.
type Sizer interface {
	Sizes() map[string]int
}

// MemoryHolder reports the bytes a policy's state holds (cache_aware: its
// tree, the quantity max_tree_size bounds), exported as
// vllm_router_tree_bytes.
type MemoryHolder interface {
	HeldBytes() int
}

// Rand is the randomness a policy draws from. Implementations must be safe
// for concurrent use.
type Rand interface {
	IntN(n int) int
}

// Params are the tunables of the policies that have any.
type Params struct {
	CacheThreshold      float64
	BalanceAbsThreshold int
	BalanceRelThreshold float64
	// MaxTreeSize bounds the bytes cache_aware's tree holds: text, nodes
	// and entries together, over every target and model.
	MaxTreeSize int
	// Blocks is the KV-event index precise_prefix reads (nil: a new empty
	// one, which the caller cannot feed).
	Blocks *BlockIndex
	// SLORefuse makes predicted_latency refuse a request no candidate is
	// predicted to serve within its SLO, instead of deprioritising it.
	SLORefuse bool
	// Scorers are the weighted policy's terms.
	Scorers []Scorer
}

// Policy names.
const (
	Random           = "random"
	RoundRobin       = "round_robin"
	PowerOfTwo       = "power_of_two"
	ConsistentHash   = "consistent_hash"
	CacheAware       = "cache_aware"
	LeastLoaded      = "least_loaded"
	PrecisePrefix    = "precise_prefix"
	PredictedLatency = "predicted_latency"
	Weighted         = "weighted"
)

// Names lists every registered policy.
func Names() []string {
	return []string{Random, RoundRobin, PowerOfTwo, ConsistentHash, CacheAware, LeastLoaded, PrecisePrefix, PredictedLatency, Weighted}
}

// New builds the named policy. rnd may be nil for a time-seeded source.
func New(name string, p Params, rnd Rand) (Policy, error) {
	if rnd == nil {
		rnd = NewLockedRand(rand.Uint64())
	}
	switch name {
	case Random:
		return &random{rnd: rnd}, nil
	case RoundRobin:
		return &roundRobin{}, nil
	case PowerOfTwo:
		return &powerOfTwo{rnd: rnd}, nil
	case ConsistentHash:
		return newConsistentHash(), nil
	case CacheAware:
		return newCacheAware(p), nil
	case LeastLoaded:
		return &leastLoaded{}, nil
	case PrecisePrefix:
		return newPrecisePrefix(p), nil
	case PredictedLatency:
		return newPredictedLatency(p), nil
	case Weighted:
		return newWeighted(p)
	}
	return nil, fmt.Errorf("unknown policy %q (known: %v)", name, Names())
}

// LockedRand is a seeded PCG source safe for concurrent use.
type LockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

var _ Rand = (*LockedRand)(nil)

// NewLockedRand returns a deterministic source for seed.
func NewLockedRand(seed uint64) *LockedRand {
	return &LockedRand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// IntN returns a uniform int in [0, n).
func (l *LockedRand) IntN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

// Float64 returns a uniform float in [0, 1).
func (l *LockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}
