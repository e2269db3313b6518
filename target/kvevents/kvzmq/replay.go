package kvzmq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zeromq/zmq4"

	"github.com/autoinfer/autoinfer/target/kvevents"
)

// Replay asks a publisher's replay socket for every buffered batch from
// start on and calls each with every one in order, until the end marker
// (nil), ctx ends, or each fails. A batch whose sequence number is not the
// next one expected is an error: the buffer no longer reaches back that far.
func Replay(ctx context.Context, endpoint string, start uint64, each func(seq uint64, b kvevents.Batch) error) error {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel below
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := zmq4.NewDealer(ctx)
	wg.Go(func() { <-ctx.Done(); d.Close() }) // unblocks Recv
	if err := d.Dial(endpoint); err != nil {
		return fmt.Errorf("replay %s: %w", endpoint, err)
	}
	if err := d.Send(zmq4.NewMsgFrom(nil, SeqBytes(start))); err != nil {
		return fmt.Errorf("replay %s: %w", endpoint, err)
	}
	for next := start; ; next++ {
		msg, err := d.Recv()
		if err != nil {
			return errors.Join(ctx.Err(), fmt.Errorf("replay %s: %w", endpoint, err))
		}
		f := msg.Frames
		if len(f) > 0 && len(f[0]) == 0 {
			f = f[1:] // the empty delimiter frame
		}
		if len(f) != 3 || len(f[1]) != 8 {
			return fmt.Errorf("replay %s: malformed message (%d frames)", endpoint, len(f))
		}
		if IsEndSeq(f[1]) {
			return nil
		}
		if seq := binary.BigEndian.Uint64(f[1]); seq != next {
			return fmt.Errorf("replay %s: buffer starts at %d, wanted %d", endpoint, seq, next)
		}
		b, err := kvevents.Decode(f[2])
		if err != nil {
			return err
		}
		if err := each(next, b); err != nil {
			return err
		}
	}
}
