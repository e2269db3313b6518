package routertest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// Network is an in-memory network of net.Pipe connections for tests that
// run inside a testing/synctest bubble. A goroutine reading a real socket is
// never "durably blocked", so a bubble whose router, workers or clients use
// TCP never lets its fake clock advance; a pipe is made of channels and is.
// Create the Network, its listeners and its clients inside the bubble.
//
// Addresses are "hostN.pipe:80". Dialling an address nobody listens on
// fails at once with ECONNREFUSED, like a dead worker's port. Closing a
// listener frees its address for a restart; connections already accepted
// stay open until their owner closes them, as with TCP.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*listener
	hosts     int // hosts handed out by Listen("")
	ports     int // client ports handed out by DialContext
}

// NewNetwork returns an empty network.
func NewNetwork() *Network { return &Network{listeners: map[string]*listener{}} }

// Listen listens on addr ("host:port"), or on a new address when addr is "".
func (n *Network) Listen(addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr == "" {
		n.hosts++
		addr = fmt.Sprintf("host%d.pipe:80", n.hosts)
	}
	if _, taken := n.listeners[addr]; taken {
		return nil, &net.OpError{Op: "listen", Net: "pipe", Addr: pipeAddr(addr), Err: syscall.EADDRINUSE}
	}
	l := &listener{net: n, addr: pipeAddr(addr), conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// DialContext connects to the listener on addr; network is ignored. It
// blocks until the listener accepts, the listener closes or ctx ends.
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.ports++
	from := pipeAddr(fmt.Sprintf("client.pipe:%d", n.ports))
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: network, Source: from, Addr: pipeAddr(addr), Err: syscall.ECONNREFUSED}
	if l == nil {
		return nil, refused
	}
	server, client := net.Pipe()
	select {
	case l.conns <- &conn{Conn: server, local: l.addr, remote: from}:
		return &conn{Conn: client, local: from, remote: l.addr}, nil
	case <-l.done:
		_ = server.Close()
		_ = client.Close()
		return nil, refused
	case <-ctx.Done():
		_ = server.Close()
		_ = client.Close()
		return nil, ctx.Err()
	}
}

type listener struct {
	net   *Network
	addr  pipeAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.net.mu.Lock()
		if l.net.listeners[string(l.addr)] == l {
			delete(l.net.listeners, string(l.addr))
		}
		l.net.mu.Unlock()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// conn is one end of a pipe with the addresses a TCP connection would
// report (net.Pipe's ends both say "pipe", which has no host to parse).
type conn struct {
	net.Conn
	local, remote net.Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }
