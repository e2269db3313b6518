package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The KV side channel stands in for NIXL: a prefill server listens on a
// loopback TCP port (advertised as remote_port); a decode server dials it
// with the request id and block ids from kv_transfer_params, the prefill
// server answers with the prompt it holds, the decode side waits the
// modelled transfer time (launch latency, descriptor posting, and the bytes
// over a link it shares with its other pulls from that server) and then
// confirms, upon which the prefill server frees the blocks. The decode engine
// sees the pulled request at its next step, as vLLM's scheduler notices
// finished receives when it schedules. The
// messages are one JSON object per line:
//
//	decode → prefill  {"request_id","engine_id","block_ids"}
//	prefill → decode  {"ok","error","num_tokens","prompt_key"}
//	decode → prefill  {"done":true}
//	prefill → decode  {"ok":true}

// pullTimeout bounds one pull apart from the modelled transfer time.
const pullTimeout = 10 * time.Second

type pullRequest struct {
	RequestID string `json:"request_id"`
	EngineID  string `json:"engine_id"`
	BlockIDs  []int  `json:"block_ids"`
}

type pullReply struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
	NumTokens int    `json:"num_tokens,omitempty"`
	PromptKey string `json:"prompt_key,omitempty"`
}

type pullDone struct {
	Done bool `json:"done"`
}

// kvChannel is a prefill server's side-channel listener.
type kvChannel struct {
	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func (k *kvChannel) port() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ln == nil {
		return 0
	}
	_, port, _ := net.SplitHostPort(k.ln.Addr().String())
	n, _ := strconv.Atoi(port)
	return n
}

// listen opens the side channel and serves it until ctx is done; wg tracks
// every goroutine it starts.
func (k *kvChannel) listen(ctx context.Context, wg *sync.WaitGroup, s *Server) error {
	ln, err := s.cfg.kvNet.Listen("tcp", net.JoinHostPort(s.cfg.kvHost, "0"))
	if err != nil {
		return fmt.Errorf("sim: opening the KV side channel: %w", err)
	}
	k.mu.Lock()
	k.ln, k.conns = ln, map[net.Conn]struct{}{}
	k.mu.Unlock()
	wg.Go(func() {
		<-ctx.Done()
		k.mu.Lock()
		ln.Close()
		for c := range k.conns {
			c.Close()
		}
		k.ln = nil
		k.mu.Unlock()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed on shutdown
			}
			k.mu.Lock()
			if k.ln == nil {
				k.mu.Unlock()
				c.Close()
				return
			}
			k.conns[c] = struct{}{}
			k.mu.Unlock()
			wg.Go(func() {
				s.servePull(c)
				k.mu.Lock()
				delete(k.conns, c)
				k.mu.Unlock()
				c.Close()
			})
		}
	})
	return nil
}

// servePull answers one decode engine's pull.
func (s *Server) servePull(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(pullTimeout + s.cfg.holdTimeout))
	dec, enc := json.NewDecoder(c), json.NewEncoder(c)
	var req pullRequest
	if err := dec.Decode(&req); err != nil {
		return
	}
	var eng *engine
	for _, e := range s.ranks {
		if e.engineID == req.EngineID {
			eng = e
		}
	}
	if eng == nil {
		_ = enc.Encode(pullReply{Error: "unknown engine " + req.EngineID})
		return
	}
	held, ok := eng.lookupHeld(req.RequestID)
	if !ok {
		_ = enc.Encode(pullReply{Error: "no KV held for request " + req.RequestID})
		return
	}
	if !slices.Equal(req.BlockIDs, blockInts(held.blocks)) {
		_ = enc.Encode(pullReply{Error: "block ids do not match the held KV"})
		return
	}
	if enc.Encode(pullReply{OK: true, NumTokens: held.tokens, PromptKey: strconv.FormatUint(held.promptKey, 16)}) != nil {
		return
	}
	var done pullDone
	if dec.Decode(&done) != nil || !done.Done {
		return // failed pull: the KV stays held until the timeout, as with NIXL
	}
	eng.releaseHeld(req.RequestID, held)
	_ = enc.Encode(pullReply{OK: true})
}

func blockInts(b []int32) []int {
	out := make([]int, len(b))
	for i, v := range b {
		out[i] = int(v)
	}
	return out
}

// kvParamsFor is the kv_transfer_params a prefill server returns for sq.
func (s *Server) kvParamsFor(eng *engine, sq *seq) *KVTransferParams {
	host, port, engineID, reqID := s.cfg.kvHost, s.kv.port(), eng.engineID, sq.id
	return &KVTransferParams{DoRemotePrefill: true, RemoteBlockIDs: sq.heldBlocks, RemoteEngineID: &engineID,
		RemoteRequestID: &reqID, RemoteHost: &host, RemotePort: &port, TPSize: s.cfg.tpSize}
}

// pullKV pulls the prompt KV named by kv from a prefill server. It returns
// how many prompt tokens need no recompute: all but the last, whose logits
// the decode engine computes to produce the first token. On any failure it
// returns 0 (local prefill) and counts the failed pull.
func (s *Server) pullKV(ctx context.Context, eng *engine, sq *seq, kv *KVTransferParams) int {
	// The loop publishes the waiting gauge; poke it so a pull shows there
	// even while the engine is idle.
	eng.pulling.Add(1)
	eng.poke()
	defer func() {
		eng.pulling.Add(-1)
		eng.poke()
	}()
	start := s.cfg.clock.Now()
	if err := s.pull(ctx, sq, kv); err != nil {
		eng.m.kvPullsFailed.Inc()
		s.logger.Warn("KV pull failed, prefilling locally", "request", sq.id, "err", err)
		return 0
	}
	eng.m.kvPullsOK.Inc()
	eng.m.kvTransfer.Observe(s.cfg.clock.Now().Sub(start).Seconds())
	return sq.promptLen - 1
}

func (s *Server) pull(ctx context.Context, sq *seq, kv *KVTransferParams) error {
	if kv.RemoteHost == nil || kv.RemotePort == nil || kv.RemoteRequestID == nil || kv.RemoteEngineID == nil {
		return errors.New("kv_transfer_params lacks remote_host, remote_port, remote_request_id or remote_engine_id")
	}
	// Bytes shared with up to max_num_seqs concurrent pulls on the link.
	ctx, cancel := context.WithTimeout(ctx, pullTimeout+s.cfg.profile.TransferTime(sq.promptLen)*time.Duration(s.cfg.maxNumSeqs))
	defer cancel()
	addr := net.JoinHostPort(*kv.RemoteHost, strconv.Itoa(*kv.RemotePort))
	c, err := s.cfg.kvNet.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dialing %s: %w", addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	dec, enc := json.NewDecoder(c), json.NewEncoder(c)
	if err := enc.Encode(pullRequest{RequestID: *kv.RemoteRequestID, EngineID: *kv.RemoteEngineID, BlockIDs: kv.RemoteBlockIDs}); err != nil {
		return fmt.Errorf("sending pull: %w", err)
	}
	var rep pullReply
	if err := dec.Decode(&rep); err != nil {
		return fmt.Errorf("reading pull reply: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("prefill engine refused: %s", rep.Error)
	}
	if rep.NumTokens != sq.promptLen || rep.PromptKey != strconv.FormatUint(sq.samp.key, 16) {
		return fmt.Errorf("held KV is for another prompt (%d tokens)", rep.NumTokens)
	}
	// The modelled transfer: launching it and posting its descriptors
	// (this side alone), then its bytes over the link to this prefill
	// server, shared with every other pull in flight on it.
	p := s.cfg.profile
	if !sleepCtx(ctx, s.cfg.clock, p.transferSetup(rep.NumTokens, s.cfg.blockSize)) {
		return fmt.Errorf("transfer interrupted: %w", ctx.Err())
	}
	if err := s.links.get(addr, s.cfg.clock, p.LinkGBps).transfer(ctx, p.kvBytes(rep.NumTokens)); err != nil {
		return fmt.Errorf("transfer interrupted: %w", err)
	}
	if err := enc.Encode(pullDone{Done: true}); err != nil {
		return fmt.Errorf("confirming pull: %w", err)
	}
	if err := dec.Decode(&rep); err != nil {
		return fmt.Errorf("reading the release confirmation: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("prefill engine did not confirm the release: %s", rep.Error)
	}
	return nil
}
