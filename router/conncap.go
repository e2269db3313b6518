package router

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// capListener admits at most max client connections at once. One more is
// answered 503 in the OpenAI shape and closed, rather than left to queue in
// the backlog or to run the process out of file descriptors: a client can
// hold many connections cheaply (slow heads, idle keep-alives), and every
// one costs buffers and a descriptor.
type capListener struct {
	net.Listener
	slots chan struct{} // one token per open connection
	// refusals are the goroutines answering refused connections; Serve
	// waits for them.
	refusals sync.WaitGroup
}

func newCapListener(ln net.Listener, maxConns int) *capListener {
	return &capListener{Listener: ln, slots: make(chan struct{}, maxConns)}
}

// refuseGrace bounds the answer to a refused connection: writing the 503
// and reading what the client already sent, so it hears the answer rather
// than a reset.
const refuseGrace = 2 * time.Second

// refused is the whole answer to a connection over the cap.
var refused = func() string {
	body := `{"error":{"message":"the router has max_connections client connections open; retry later","type":"` +
		ErrTypeTooManyConnections + `","param":null,"code":503}}` + "\n"
	return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// Accept returns the next connection under the cap, answering those over
// it itself.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &cappedConn{Conn: c, slots: l.slots}, nil
		default:
			l.refusals.Go(func() { refuse(c) })
		}
	}
}

func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseGrace))
	if _, err := io.WriteString(c, refused); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// cappedConn gives its slot back when closed, once.
type cappedConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

// CloseWrite half-closes the connection when it can: the front server
// does so after refusing a body, so the client hears the answer.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}
