package kvsub

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/kvevents/kvzmq"
)

// replayTimeout bounds one replay exchange; a worker that does not answer
// in time is treated as having no replay.
const replayTimeout = 5 * time.Second

// redialDelay is how long a subscriber whose publisher went away waits
// before dialling again (the worker may be restarting).
const redialDelay = 250 * time.Millisecond

// Sink receives one worker's events in sequence order.
type Sink interface {
	Apply(id string, b kvevents.Batch)
	// Lost says events were lost for good.
	Lost(id string)
	// Restarted says the publisher started over (a new engine).
	Restarted(id string)
}

// Source is where one routing target's events come from.
type Source struct {
	ID       string // the candidate id the events describe
	Endpoint string // tcp://host:port of the PUB socket
	Replay   string // tcp://host:port of the ROUTER socket, "" for none
	Topic    string
	// Rank, when set, keeps only batches naming this data-parallel rank.
	Rank *int
}

// Accepts reports whether b describes the source's target: every batch,
// or with Rank set only those naming that rank.
func (src Source) Accepts(b kvevents.Batch) bool {
	return src.Rank == nil || b.DPRank != nil && *b.DPRank == *src.Rank
}

// Stats counts what a subscriber saw.
type Stats struct {
	Batches  uint64 // applied, live or replayed
	Gaps     uint64 // sequence gaps seen
	Replayed uint64 // gaps repaired from the replay socket
	Lost     uint64 // gaps not repaired: the copy went stale
	Restarts uint64 // the publisher's sequence started over
}

// Subscriber follows one source.
type Subscriber struct {
	src  Source
	sink Sink
	log  *slog.Logger

	batches, gaps, replayed, lost, restarts atomic.Uint64

	// lastTS is the newest batch's timestamp (Run's goroutine only): a
	// sequence number already seen on a newer batch is a new publisher.
	lastTS float64

	mu      sync.Mutex
	applied uint64 // batches of the current publisher applied: next seq
	wake    chan struct{}
}

// New returns a subscriber of src feeding sink.
func New(src Source, sink Sink, log *slog.Logger) *Subscriber {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Subscriber{src: src, sink: sink, log: log, wake: make(chan struct{})}
}

// Stats returns the counts so far.
func (s *Subscriber) Stats() Stats {
	return Stats{Batches: s.batches.Load(), Gaps: s.gaps.Load(), Replayed: s.replayed.Load(), Lost: s.lost.Load(), Restarts: s.restarts.Load()}
}

// Next is the sequence number the subscriber expects next: every batch
// below it is applied (or was lost and counted).
func (s *Subscriber) Next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// WaitNext blocks until Next() >= seq or ctx is done.
func (s *Subscriber) WaitNext(ctx context.Context, seq uint64) error {
	for {
		s.mu.Lock()
		ok, wake := s.applied >= seq, s.wake
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Subscriber) advance(next uint64) {
	s.mu.Lock()
	s.applied = next
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// Run follows the source until ctx is done. When the publisher goes away
// it dials again after redialDelay; a restarted worker's sequence starting
// over resets its copy.
func (s *Subscriber) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	<-timer.C
	for {
		err := s.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("kv events: subscription ended; dialling again", "worker", s.src.ID, "err", err)
		timer.Reset(redialDelay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// follow subscribes once. Whatever happened while it was not subscribed
// (the worker may have restarted, or published what no one received), the
// copy starts empty and is rebuilt from the worker's buffer from sequence
// 0, which also catches what was published before the subscription took
// hold (ZMQ's slow joiner); a buffer that no longer reaches back to 0 shows
// as a gap at the first live batch: replayed if it can be, else the copy
// goes stale (counted). Then it applies live batches, repairing gaps, until
// the connection fails or ctx is done.
func (s *Subscriber) follow(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel below
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	wg.Go(func() { <-ctx.Done(); sub.Close() }) // unblocks Recv
	if err := sub.Dial(s.src.Endpoint); err != nil {
		return fmt.Errorf("kv events %s: dialing %s: %w", s.src.ID, s.src.Endpoint, err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, s.src.Topic); err != nil {
		return fmt.Errorf("kv events %s: subscribing: %w", s.src.ID, err)
	}
	next := uint64(0)
	s.sink.Restarted(s.src.ID)
	s.advance(next)
	if s.src.Replay != "" {
		next = s.replay(ctx, next)
		s.advance(next)
	}
	for {
		msg, err := sub.Recv()
		if err != nil {
			return fmt.Errorf("kv events %s: %w", s.src.ID, err)
		}
		seq, b, ok := s.decode(msg.Frames)
		if !ok {
			continue
		}
		if seq < next {
			if b.TS <= s.lastTS {
				continue // already applied from a replay
			}
			// A sequence number seen before on a newer batch: a new
			// publisher (the worker restarted, ZMQ reconnected): its cache
			// started empty, and its buffer holds its history.
			s.restarts.Add(1)
			s.sink.Restarted(s.src.ID)
			next = 0
		}
		if seq > next {
			s.gaps.Add(1)
			if got := s.replay(ctx, next); got > seq {
				s.replayed.Add(1)
				next = got
				s.advance(next)
				continue
			} else if got == seq {
				s.replayed.Add(1)
			} else {
				s.lost.Add(1)
				s.log.Warn("kv events lost; scoring the worker approximately", "worker", s.src.ID, "from", next, "to", seq)
				s.sink.Lost(s.src.ID)
			}
		}
		s.apply(b)
		next = seq + 1
		s.advance(next)
	}
}

func (s *Subscriber) apply(b kvevents.Batch) {
	s.lastTS = max(s.lastTS, b.TS)
	if !s.src.Accepts(b) {
		return
	}
	s.batches.Add(1)
	s.sink.Apply(s.src.ID, b)
}

// decode reads [topic, seq, payload]; a malformed message is logged and
// skipped (the next good one shows the gap).
func (s *Subscriber) decode(frames [][]byte) (uint64, kvevents.Batch, bool) {
	if len(frames) != 3 || len(frames[1]) != 8 {
		s.log.Warn("kv events: malformed message", "worker", s.src.ID, "frames", len(frames))
		return 0, kvevents.Batch{}, false
	}
	b, err := kvevents.Decode(frames[2])
	if err != nil {
		s.log.Warn("kv events: undecodable batch", "worker", s.src.ID, "err", err)
		return 0, kvevents.Batch{}, false
	}
	return binary.BigEndian.Uint64(frames[1]), b, true
}

// replay applies every batch the worker's replay socket still buffers from
// start on; it returns the sequence number after the last one applied
// (start when nothing was). The caller advances Next once it has counted
// the outcome, so a waiter sees the counts of what it waited for.
func (s *Subscriber) replay(ctx context.Context, start uint64) uint64 {
	if s.src.Replay == "" {
		return start
	}
	rctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	next := start
	err := kvzmq.Replay(rctx, s.src.Replay, start, func(seq uint64, b kvevents.Batch) error {
		s.apply(b)
		next = seq + 1
		return nil
	})
	if err != nil {
		s.log.Warn("kv events: replay failed", "worker", s.src.ID, "err", err)
	}
	return next
}
