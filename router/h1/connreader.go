package h1

import (
	"context"
	"net"
	"time"
)

// connReader is what a server connection's buffered reader reads from:
// the bytes a watch read brought (see watch.go), then the connection. It
// starts the header timeout when a head takes more than one read.
type connReader struct {
	nc          net.Conn
	dl          *deadlines
	inHead      bool // reading a request head
	headReads   int
	headTimeout time.Duration

	wbuf []byte // a watch read's buffer
	data []byte // bytes of the last watch read not yet handed over
	err  error  // the last watch read's error, handed over after data

	cancel context.CancelCauseFunc // the connection's context
}

func newConnReader(nc net.Conn, headTimeout time.Duration) *connReader {
	return &connReader{nc: nc, headTimeout: headTimeout}
}

// readingHead starts (true) or ends reading a request head.
func (cr *connReader) readingHead(on bool) {
	cr.inHead, cr.headReads = on, 0
}

func (cr *connReader) Read(p []byte) (int, error) {
	if cr.inHead {
		// The first read waits for the request under the idle timeout;
		// the rest of the head must come within the header timeout.
		if cr.headReads++; cr.headReads == 2 {
			_ = cr.dl.setRead(time.Now().Add(cr.headTimeout))
		}
	}
	switch {
	case len(cr.data) > 0:
		n := copy(p, cr.data)
		cr.data = cr.data[n:]
		return n, nil
	case cr.err != nil:
		return 0, cr.err
	}
	if err := cr.dl.applyRead(); err != nil {
		return 0, err
	}
	return cr.nc.Read(p)
}

// drained reports whether every byte read so far was handed over.
func (cr *connReader) drained() bool { return len(cr.data) == 0 && cr.err == nil }

// clientGone cancels the connection's context, which is its requests'.
func (cr *connReader) clientGone() { cr.cancel(errClientGone) }
