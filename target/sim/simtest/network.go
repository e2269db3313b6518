package simtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Network is an in-memory network over net.Pipe. Its listeners and
// connections block on channels only, so servers on it can run inside a
// testing/synctest bubble, where a goroutine blocked on a real socket would
// keep the fake clock from advancing. Addresses are "127.0.0.1:<n>" with n
// counted from 1; they mean nothing outside the Network.
//
// It implements sim.Network, so a prefill engine's KV side channel can live
// on it too.
type Network struct {
	mu        sync.Mutex
	last      int
	listeners map[string]*pipeListener

	clientOnce sync.Once
	transport  *http.Transport
}

// NewNetwork returns an empty in-memory network.
func NewNetwork() *Network { return &Network{listeners: map[string]*pipeListener{}} }

// Listen opens a listener. The port of address is ignored: every listener
// gets a fresh one.
func (n *Network) Listen(_, _ string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.last++
	l := &pipeListener{n: n, addr: pipeAddr("127.0.0.1:" + strconv.Itoa(n.last)),
		conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[string(l.addr)] = l
	return l, nil
}

// DialContext connects to the listener at address.
func (n *Network) DialContext(ctx context.Context, _, address string) (net.Conn, error) {
	n.mu.Lock()
	l, ok := n.listeners[address]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dial %s: connection refused", address)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, fmt.Errorf("dial %s: connection refused", address)
	case <-ctx.Done():
		return nil, fmt.Errorf("dial %s: %w", address, ctx.Err())
	}
}

type pipeListener struct {
	n     *Network
	addr  pipeAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	err := errors.New("listener already closed")
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		delete(l.n.listeners, string(l.addr))
		l.n.mu.Unlock()
		err = nil
	})
	return err
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }
