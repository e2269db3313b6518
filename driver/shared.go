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
type Workloads struct {
	mu    sync.Mutex
	items map[string]*sharedItems
}

type sharedItems struct {
	once  sync.Once
	items workload.Items
	err   error
}

// NewWorkloads returns an empty set of shared workloads.
func NewWorkloads() *Workloads { return &Workloads{items: map[string]*sharedItems{}} }

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
