package sim

import (
	"context"
	"net"
	"sync"
)

// kvChannel is a prefill server's KV side channel (milestone 3).
type kvChannel struct {
	mu sync.Mutex
	ln net.Listener
}

func (k *kvChannel) port() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ln == nil {
		return 0
	}
	return k.ln.Addr().(*net.TCPAddr).Port
}

func (k *kvChannel) listen(context.Context, *sync.WaitGroup, *Server) error { return nil }

func (s *Server) pullKV(context.Context, *engine, *seq, *KVTransferParams) int { return 0 }

func (s *Server) kvParamsFor(*engine, *seq) *KVTransferParams { return nil }
