package sim

import (
	"context"
	"fmt"
	"sync"

	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/kvevents/kvzmq"
)

// kvEventLog gathers one rank's prefix-cache events between flushes, in
// the order they happened, and hands them to the server's publisher as one
// batch. Loop-owned: touched only under engine.mu.
type kvEventLog struct {
	srv    *Server
	rank   int // -1: the server has one rank, so batches name none
	events []kvevents.Event
	// last extendable BlockStored: its sequence and the block index after
	// its last block, so consecutive blocks of one sequence share an event.
	lastSeq  *seq
	lastNext int
	// sink, when set, takes every batch instead of the publisher (a
	// Fleet's engines: ObserveKVEvents).
	sink func(kvevents.Batch)
}

// stored records that block i of s entered the cache.
func (l *kvEventLog) stored(s *seq, i, bs int) {
	toks := make([]int, 0, bs)
	for id := range s.ids(i*bs, (i+1)*bs) {
		toks = append(toks, id)
	}
	h := kvevents.IntHash(s.hashes[i])
	if n := len(l.events); n > 0 && l.lastSeq == s && l.lastNext == i {
		if ev, ok := l.events[n-1].(kvevents.BlockStored); ok {
			ev.BlockHashes = append(ev.BlockHashes, h)
			ev.TokenIDs = append(ev.TokenIDs, toks...)
			l.events[n-1] = ev
			l.lastNext = i + 1
			return
		}
	}
	ev := kvevents.BlockStored{BlockHashes: []kvevents.BlockHash{h}, TokenIDs: toks, BlockSize: bs, Medium: kvevents.MediumGPU}
	if i > 0 {
		p := kvevents.IntHash(s.hashes[i-1])
		ev.Parent = &p
	}
	l.events = append(l.events, ev)
	l.lastSeq, l.lastNext = s, i+1
}

// removed records that the block holding h was evicted.
func (l *kvEventLog) removed(h uint64) {
	if n := len(l.events); n > 0 {
		if ev, ok := l.events[n-1].(kvevents.BlockRemoved); ok {
			ev.BlockHashes = append(ev.BlockHashes, kvevents.IntHash(h))
			l.events[n-1] = ev
			return
		}
	}
	l.events = append(l.events, kvevents.BlockRemoved{BlockHashes: []kvevents.BlockHash{kvevents.IntHash(h)}, Medium: kvevents.MediumGPU})
	l.lastSeq = nil
}

// cleared records a reset of the whole cache.
func (l *kvEventLog) cleared() {
	l.events = append(l.events, kvevents.AllBlocksCleared{})
	l.lastSeq = nil
}

// flush publishes what was gathered as one batch stamped with the engine
// clock's now. The engine flushes before any sequence of the step learns
// of its progress, so a client that saw a response can rely on the events
// of the blocks it stored having a sequence number already.
func (l *kvEventLog) flush(e *engine) {
	if len(l.events) == 0 {
		return
	}
	b := kvevents.Batch{TS: float64(e.cfg.clock.Now().UnixNano()) / 1e9, Events: l.events}
	if l.rank >= 0 {
		b.DPRank = &l.rank
	}
	l.events, l.lastSeq = nil, nil
	if l.sink != nil {
		l.sink(b)
		return
	}
	if err := l.srv.publishKV(b); err != nil {
		l.srv.logger.Warn("kv events: batch not published", "err", err)
	}
}

// kvPublisher is the server's publisher once Serve bound it; ready closes
// when Serve has tried.
type kvPublisher struct {
	ready     chan struct{}
	readyOnce sync.Once
	mu        sync.Mutex
	pub       *kvzmq.Publisher
}

func newKVPublisher() kvPublisher { return kvPublisher{ready: make(chan struct{})} }

// listenKVEvents binds the event sockets and starts the publisher, owned
// by wg, until ctx is done. Nothing happens without enable_kv_cache_events.
func (s *Server) listenKVEvents(ctx context.Context, wg *sync.WaitGroup) error {
	defer s.kvPub.readyOnce.Do(func() { close(s.kvPub.ready) })
	if !s.cfg.kvEvents.Enabled() {
		return nil
	}
	pub, err := kvzmq.Listen(ctx, s.cfg.kvEvents, s.cfg.kvEventsLose)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	s.kvPub.mu.Lock()
	s.kvPub.pub = pub
	s.kvPub.mu.Unlock()
	wg.Go(func() { pub.Run(ctx) })
	return nil
}

func (s *Server) publishKV(b kvevents.Batch) error {
	s.kvPub.mu.Lock()
	pub := s.kvPub.pub
	s.kvPub.mu.Unlock()
	if pub == nil {
		return nil // not serving yet: no subscriber can exist
	}
	_, err := pub.Publish(b)
	return err
}

// KVEventsEndpoint waits until Serve has bound the KV event sockets and
// returns their addresses: the events' and the replay socket's ("" for a
// server without KV events or without a replay endpoint).
func (s *Server) KVEventsEndpoint(ctx context.Context) (events, replay string, err error) {
	select {
	case <-s.kvPub.ready:
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
	s.kvPub.mu.Lock()
	defer s.kvPub.mu.Unlock()
	if s.kvPub.pub == nil {
		return "", "", nil
	}
	return s.kvPub.pub.Endpoint(), s.kvPub.pub.ReplayEndpoint(), nil
}

// KVEventsPublished is how many KV event batches have sequence numbers:
// every event of a step the server has answered for is in one of them.
func (s *Server) KVEventsPublished() uint64 {
	s.kvPub.mu.Lock()
	defer s.kvPub.mu.Unlock()
	if s.kvPub.pub == nil {
		return 0
	}
	return s.kvPub.pub.Published()
}

// enableKVEvents makes e record its cache events in l: evictions through
// the pool's hook (after the CPU tier's, which keeps the block).
func (e *engine) enableKVEvents(l *kvEventLog) {
	e.kv = l
	tierStore := e.pool.evicted
	e.pool.evicted = func(h uint64) {
		if tierStore != nil {
			tierStore(h)
		}
		l.removed(h)
	}
}

// dpRankOf is the rank a batch names: none when the server has one rank.
func dpRankOf(r, ranks int) int {
	if ranks == 1 {
		return -1
	}
	return r
}
