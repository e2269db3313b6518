package h1

import (
	"net"
	"time"
)

// deadlines are a server connection's read and write deadlines, applied
// lazily: a handler (the router sets one for the body, clears it, sets a
// write window per chunk) may set several per request, while only the
// one in force when the connection is actually read or written matters,
// and each one applied moves a runtime timer. A deadline set while
// another goroutine's read is pending (watch.go) applies at once.
type deadlines struct {
	nc               net.Conn
	wantRead, isRead time.Time
	wantWrite, isWrt time.Time
	readPending      bool // a watch read is pending
}

func (d *deadlines) setRead(t time.Time) error {
	d.wantRead = t
	if d.readPending {
		return d.applyRead()
	}
	return nil
}

func (d *deadlines) setWrite(t time.Time) error {
	d.wantWrite = t
	return nil
}

// applyRead and applyWrite put the wanted deadline in force before the
// connection is read or written.
func (d *deadlines) applyRead() error {
	if d.wantRead.Equal(d.isRead) {
		return nil
	}
	d.isRead = d.wantRead
	return d.nc.SetReadDeadline(d.wantRead)
}

func (d *deadlines) applyWrite() error {
	if d.wantWrite.Equal(d.isWrt) {
		return nil
	}
	d.isWrt = d.wantWrite
	return d.nc.SetWriteDeadline(d.wantWrite)
}

// connWriter is what a server connection's buffered writer writes to.
type connWriter struct{ d *deadlines }

func (w connWriter) Write(p []byte) (int, error) {
	if err := w.d.applyWrite(); err != nil {
		return 0, err
	}
	return w.d.nc.Write(p)
}
