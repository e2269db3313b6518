package driver

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// Workloads shares built workloads between the runs of one process (a
// search's candidates): a run whose workload, request count, seed, stream
// id and tokenizer equal an earlier run's reads the items built for it —
// the trace read and parsed once, its prompts' token counts and hash ids
// held once, one block cache — instead of building its own. Items are
// read-only once built but for a trace's block cache, which is locked (and
// whose content is a function of the block's id, so sharing it changes no
// byte). A nil *Workloads shares nothing.
//
// It also keeps the stream hash of each measured stream a run produced
// whole: a later run of the same stream (streamKey) takes it instead of
// producing the requests it did not send (a run max_seconds stopped) only
// to digest them. Each run still takes the digest of every body it
// produces, once, for its own sent hash (bodySums).
type Workloads struct {
	mu     sync.Mutex
	items  map[string]*sharedItems
	hashes map[string]string // stream hashes by streamKey
}

type sharedItems struct {
	once  sync.Once
	items workload.Items
	err   error
}

// NewWorkloads returns an empty set of shared workloads.
func NewWorkloads() *Workloads {
	return &Workloads{items: map[string]*sharedItems{}, hashes: map[string]string{}}
}

// Len is how many distinct workloads were built.
func (w *Workloads) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.items)
}

// buildItems is workload.BuildItems of cfg's measured phase, shared
// through w.
func (w *Workloads) buildItems(cfg Config, src workload.Source, tok workload.Tokenizer) (workload.Items, error) {
	if w == nil {
		return workload.BuildItems(cfg.Workload, cfg.NumPrompts, src, tok)
	}
	spec, err := json.Marshal(cfg.Workload)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%s\x00%s", spec, cfg.NumPrompts, cfg.Seed, cfg.TrialID, tok.ID())
	w.mu.Lock()
	s, ok := w.items[key]
	if !ok {
		s = &sharedItems{}
		w.items[key] = s
	}
	w.mu.Unlock()
	s.once.Do(func() { s.items, s.err = workload.BuildItems(cfg.Workload, cfg.NumPrompts, src, tok) })
	return s.items, s.err
}

// streamKey identifies cfg's measured stream among runs sharing built
// items: cfg (with defaults) but for the fields that only address,
// name, time or judge a run and never reach a request's index, offset,
// length, session value or body, and the tokenizer's id. Everything else
// is in it, so two runs with one key produce the same stream from the
// same shared items (the items' own key is a part of it) and digest it to
// the same hash. ok is false where cfg does not encode (nothing is then
// shared).
func streamKey(cfg Config, tok workload.Tokenizer) (key string, ok bool) {
	k := cfg.withDefaults()
	k.BaseURL, k.RunID, k.Label, k.Backend, k.APIKey = "", "", "", "", ""
	k.HTTPClient, k.Tokenizer = nil, nil
	k.Goodput, k.Percentiles, k.KeepText = SLO{}, nil, false
	k.Timeout, k.ReadyCheckTimeout, k.HTTPOverhead, k.HTTPInbound = 0, 0, 0, 0
	// The arrival's rate is +Inf by default, which JSON does not encode:
	// its scalar fields are printed instead.
	arrival := fmt.Sprintf("%+v", k.Arrival)
	k.Arrival = Arrival{}
	b, err := json.Marshal(k) //nolint:staticcheck // HTTPClient (a func inside) is nil here
	if err != nil {
		return "", false
	}
	return string(b) + "\x00" + arrival + "\x00" + tok.ID(), true
}

// streamHash is the stream hash a run of the stream key names recorded
// through w, if one did.
func (w *Workloads) streamHash(key string) (string, bool) {
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.hashes[key]
	return h, ok
}

// recordStreamHash keeps the hash of the stream key names, digested by a
// run that produced the whole stream.
func (w *Workloads) recordStreamHash(key, hash string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hashes[key] = hash
}
