package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/target/mixhash"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// handleGenerate serves /v1/completions (chat=false) and
// /v1/chat/completions.
func (s *Server) handleGenerate(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.load.Add(1)
		defer s.load.Add(-1)
		ctx := r.Context()
		obs := s.observe.Load()
		var received time.Time
		if obs != nil {
			received = s.cfg.clock.Now()
		}
		f := s.faults.Load()
		if f.AddedLatency > 0 && !sleepCtx(ctx, s.cfg.clock, f.AddedLatency) {
			return
		}
		if code := f.injectedStatus(); code != 0 {
			writeError(w, &apiError{status: code, typ: errorTypeFor(code), msg: fmt.Sprintf("injected fault: status %d", code)})
			return
		}
		req, e := parseGenRequest(r, chat, &s.cfg)
		if e != nil {
			writeError(w, e)
			return
		}
		eng, e := s.pickRank(r)
		if e != nil {
			writeError(w, e)
			return
		}
		id := requestID(r, chat)
		w.Header().Set("X-Request-Id", id)
		sq := s.newSeq(id, req, nil)
		if req.kv != nil {
			switch {
			case s.cfg.role == RolePrefill && req.kv.DoRemoteDecode && !req.stream:
				sq.holdKV = true
			case s.cfg.role == RoleDecode && req.kv.DoRemotePrefill:
				sq.remoteKV = s.pullKV(ctx, eng, sq, req.kv)
			}
		}
		if !eng.submit(sq) {
			writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: typeUnavailable, msg: "engine is shutting down"})
			return
		}
		fl := &follower{s: s, eng: eng, sq: sq, req: req}
		var answered bool
		if req.stream {
			answered = s.stream(ctx, w, fl)
		} else {
			answered = s.respond(ctx, w, fl)
		}
		if answered && obs != nil {
			(*obs)(eng.timing(sq, received, r.Header.Get("X-Request-Id")))
		}
	}
}

// newSeq builds the engine sequence of a validated request; memo keeps
// the hashing of a spans prompt (a Fleet's; nil over HTTP, whose prompts
// are flat).
func (s *Server) newSeq(id string, req *genRequest, memo *promptMemo) *seq {
	bs := 0
	if s.cfg.prefixCache {
		bs = s.cfg.blockSize
	}
	seed := mixhash.FNV64a(s.cfg.model)
	var key uint64
	var hashes []uint64
	if req.spans != nil {
		key, hashes = hashSpans(seed, req.spans, bs, memo)
	} else {
		key, hashes = hashPrompt(seed, req.prompt, bs)
	}
	samp := sampling{key: key, temp: req.temperature, prec: s.cfg.precision}
	if req.temperature > 0 {
		if req.seed != nil {
			samp.seedKey = mixhash.Mix64(uint64(*req.seed) ^ 0x51ed5eed)
		} else {
			samp.seedKey = rand.Uint64()
		}
	}
	target, reason := req.maxTokens, "length"
	if !req.ignoreEOS {
		if n := max(samp.naturalLength(), req.minTokens); n < target {
			target, reason = n, "stop"
		}
	}
	sq := newSeq(id, req.prompt, samp, target, reason, s.cfg.clock.Now())
	sq.spans, sq.promptLen, sq.hashes = req.spans, req.promptLen(), hashes
	return sq
}

// requestID is vLLM's: the X-Request-Id header when given, else random,
// prefixed by the object kind.
func requestID(r *http.Request, chat bool) string {
	base := r.Header.Get("X-Request-Id")
	if base == "" {
		base = strconv.FormatUint(rand.Uint64(), 16) + strconv.FormatUint(rand.Uint64(), 16)
	}
	if chat {
		return "chatcmpl-" + base
	}
	return "cmpl-" + base
}

// sink receives a request's tokens in order. token is called once per
// generated token (last marks the final one, with the follower's finish
// fields set); flush after each batch of tokens the engine produced.
type sink interface {
	token(pos, id int, piece string, last bool) error
	flush() error
}

// follower turns an engine sequence into output tokens: it computes token
// ids from the sampling model, applies stop strings and stop token ids, and
// decides the finish reason.
type follower struct {
	s   *Server
	eng *engine
	sq  *seq
	req *genRequest

	next       int
	text       []byte // output so far, kept only when stop strings apply
	finish     string
	stopReason any // nil, the matched stop string, or the stop token id
	completion int // completion tokens counted in usage
	stalled    bool
}

// run feeds out until the sequence ends, the client goes away (the
// sequence is cancelled) or the engine stops.
func (f *follower) run(ctx context.Context, out sink, streaming bool) error {
	sq := f.sq
	for {
		n, done := sq.state()
		for f.next < n {
			pos := f.next
			f.next++
			if streaming && !f.stall(ctx, pos, out) {
				f.eng.cancel(sq, abortClientGone)
				return ctx.Err()
			}
			id := sq.samp.token(pos)
			piece := tokenizer.Piece(id, pos == 0)
			last := done && f.next == n
			if p, stopped := f.checkStop(pos, id, piece); stopped {
				piece, last = p, true
				f.eng.cancel(sq, abortStopString)
			}
			if last && f.finish == "" {
				f.finish = sq.finishReason
			}
			f.completion = pos + 1
			if err := out.token(pos, id, piece, last); err != nil {
				f.eng.cancel(sq, abortClientGone)
				return err
			}
			if last {
				return out.flush()
			}
		}
		if done {
			if sq.err != nil {
				return sq.err
			}
			return fmt.Errorf("sequence ended after %d tokens without a final token", n)
		}
		if err := out.flush(); err != nil {
			f.eng.cancel(sq, abortClientGone)
			return err
		}
		select {
		case <-sq.notify:
		case <-ctx.Done():
			f.eng.cancel(sq, abortClientGone)
			return ctx.Err()
		}
	}
}

// checkStop applies stop token ids and stop strings (both only once
// min_tokens are out). A stop string is cut from the output; text already
// streamed before the match cannot be taken back.
func (f *follower) checkStop(pos, id int, piece string) (string, bool) {
	if pos+1 < f.req.minTokens {
		return piece, false
	}
	if slices.Contains(f.req.stopIDs, id) {
		f.finish, f.stopReason = "stop", id
		return piece, true
	}
	if len(f.req.stops) == 0 {
		return piece, false
	}
	prev := len(f.text)
	f.text = append(f.text, piece...)
	for _, stop := range f.req.stops {
		from := max(0, prev-len(stop)+1)
		if k := strings.Index(string(f.text[from:]), stop); k >= 0 {
			k += from
			f.finish, f.stopReason = "stop", stop
			cut := ""
			if k > prev {
				cut = string(f.text[prev:k])
			}
			f.text = f.text[:k]
			return cut, true
		}
	}
	return piece, false
}

// stall holds a stream while a Stall fault covers token pos. It reports
// false when the client or the server gave up meanwhile.
func (f *follower) stall(ctx context.Context, pos int, out sink) bool {
	flt := f.s.faults.Load()
	if f.stalled || !flt.Stall || pos < flt.StallAfterTokens {
		return true
	}
	f.stalled = true
	if out.flush() != nil {
		return false
	}
	return stallFor(ctx, f.s.cfg.clock, flt.StallFor)
}

// stallFor waits d on c, or until ctx is done when d is 0.
func stallFor(ctx context.Context, c Clock, d time.Duration) bool {
	if d == 0 {
		<-ctx.Done()
		return false
	}
	return sleepCtx(ctx, c, d)
}
