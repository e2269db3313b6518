package kvzmq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"

	"github.com/autoinfer/autoinfer/target/kvevents"
)

// endSeq is the sequence number (-1) that ends a replay, as vLLM's.
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// SeqBytes is the wire form of a sequence number.
func SeqBytes(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

type entry struct {
	seq     uint64
	payload []byte
}

// Publisher sends batches on a ZMQ PUB socket in sequence order (the
// first is 0) and, with a replay endpoint, answers replay requests from
// its buffer of the last buffer_steps batches. Publish never blocks the
// engine: a full send queue drops the batch (counted in Dropped), and the
// gap shows in the sequence numbers, as in vLLM.
type Publisher struct {
	topic  []byte
	pub    zmq4.Socket
	replay zmq4.Socket // nil without a replay endpoint
	// wake tells Run that pending has batches (capacity 1: one signal
	// covers any number of them).
	wake chan struct{}
	// Lose, when set, is asked for every batch; true publishes nothing for
	// it (the batch is still buffered for replay): a test fault modelling
	// a lost message.
	lose func(seq uint64) bool

	mu       sync.Mutex
	next     uint64
	pending  []entry // queued for Run, at most maxQueue; grows as needed
	maxQueue int
	ring     []entry // circular: the last ringCap batches
	ringCap  int
	dropped  uint64
}

// Listen binds the sockets of cfg on 127.0.0.1 (whatever host the
// endpoints name). lose may be nil. The sockets close when ctx is done;
// Run must be running for anything to be sent.
func Listen(ctx context.Context, cfg kvevents.Config, lose func(seq uint64) bool) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	ep, err := kvevents.Loopback(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("kv-events-config.endpoint: %w", err)
	}
	p := &Publisher{topic: []byte(cfg.Topic), wake: make(chan struct{}, 1), maxQueue: cfg.MaxQueueSize, lose: lose, ringCap: cfg.BufferSteps}
	p.pub = zmq4.NewPub(ctx)
	if err := p.pub.Listen(ep); err != nil {
		p.pub.Close()
		return nil, fmt.Errorf("kv events: listening on %s: %w", ep, err)
	}
	if cfg.ReplayEndpoint != "" {
		rep, err := kvevents.Loopback(cfg.ReplayEndpoint)
		if err == nil {
			p.replay = zmq4.NewRouter(ctx)
			err = p.replay.Listen(rep)
		}
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("kv events: replay endpoint %s: %w", cfg.ReplayEndpoint, err)
		}
	}
	return p, nil
}

// Endpoint is the address subscribers dial.
func (p *Publisher) Endpoint() string { return endpointOf(p.pub) }

// ReplayEndpoint is the replay socket's address ("" without one).
func (p *Publisher) ReplayEndpoint() string {
	if p.replay == nil {
		return ""
	}
	return endpointOf(p.replay)
}

func endpointOf(s zmq4.Socket) string {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return fmt.Sprintf("tcp://%s", a.String())
	}
	return ""
}

// Publish encodes b, gives it the next sequence number and queues it for
// sending; it returns the number.
func (p *Publisher) Publish(b kvevents.Batch) (uint64, error) {
	payload, err := b.Encode()
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := entry{seq: p.next, payload: payload}
	p.next++
	if p.ringCap > 0 {
		if len(p.ring) < p.ringCap {
			p.ring = append(p.ring, e)
		} else {
			p.ring[e.seq%uint64(p.ringCap)] = e
		}
	}
	if len(p.pending) >= p.maxQueue {
		p.dropped++
		return e.seq, nil
	}
	p.pending = append(p.pending, e)
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return e.seq, nil
}

// Published is the number of batches given sequence numbers so far (the
// next batch's number).
func (p *Publisher) Published() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// Dropped counts batches a full queue dropped.
func (p *Publisher) Dropped() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Run sends queued batches and serves replays until ctx is done, then
// closes the sockets.
func (p *Publisher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.Close() // unblocks the replay loop's Recv
	if p.replay != nil {
		wg.Go(p.serveReplay)
	}
	var batch []entry
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		batch, p.pending = p.pending, batch[:0]
		p.mu.Unlock()
		for _, e := range batch {
			if p.lose != nil && p.lose(e.seq) {
				continue
			}
			// A send error means no subscriber connection took it; PUB
			// semantics drop it, and the gap shows in the sequence.
			_ = p.pub.Send(zmq4.NewMsgFrom(p.topic, SeqBytes(e.seq), e.payload))
		}
		clear(batch) // drop the payloads; the ring keeps what replay needs
	}
}

// serveReplay answers [identity, "", start] with every buffered batch
// from start on, then the end marker, until the socket closes.
func (p *Publisher) serveReplay() {
	for {
		msg, err := p.replay.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) < 3 || len(msg.Frames[2]) != 8 {
			continue
		}
		id, start := msg.Frames[0], binary.BigEndian.Uint64(msg.Frames[2])
		p.mu.Lock()
		var out []entry
		for s := max(start, p.next-uint64(len(p.ring))); s < p.next; s++ {
			out = append(out, p.ring[s%uint64(p.ringCap)])
		}
		p.mu.Unlock()
		for _, e := range out {
			if p.replay.Send(zmq4.NewMsgFrom(id, nil, p.topic, SeqBytes(e.seq), e.payload)) != nil {
				break
			}
		}
		_ = p.replay.Send(zmq4.NewMsgFrom(id, nil, nil, endSeq, nil))
	}
}

// Close closes the sockets (Run does it when its context ends).
func (p *Publisher) Close() error {
	err := p.pub.Close()
	if p.replay != nil {
		err = errors.Join(err, p.replay.Close())
	}
	return err
}

// IsEndSeq reports whether a replayed sequence frame is the end marker.
func IsEndSeq(b []byte) bool { return string(b) == string(endSeq) }
