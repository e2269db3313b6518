package adapter

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
)

// DecisionLine is one line of a decision record: the trial, one routing
// decision the router's own code made in it, and, for a measured request,
// what came of it.
type DecisionLine struct {
	Trial string `json:"trial"`
	virtual.Decision
	// Result is the measured request's outcome (nil for warm-up requests,
	// for a search's runs, which keep no records, and for requests whose
	// record never became final: a run that failed).
	Result *DecisionResult `json:"result,omitempty"`
}

// DecisionResult is a measured request's outcome, from its record.
type DecisionResult struct {
	Success      bool    `json:"success"`
	TTFTMs       float64 `json:"ttft_ms"`
	E2ELMs       float64 `json:"e2el_ms"`
	OutputTokens int     `json:"output_tokens"`
	// CachedTokens is what the engine's usage reported as served from its
	// prefix cache (nil: not reported).
	CachedTokens *int `json:"cached_tokens,omitempty"`
}

// decisionStream writes the decision record as the run goes: each
// decision in the order it was made, a measured one once its request's
// record is final (with its outcome). It holds only the decisions waiting
// behind one whose request is still in flight.
type decisionStream struct {
	enc   *json.Encoder
	trial string
	queue []virtual.Decision // made, not written yet; from head
	head  int
	// waiting counts the queued decisions of each measured request;
	// results are the outcomes of requests with decisions queued.
	waiting map[int]int
	results map[int]*DecisionResult
	err     error
}

func newDecisionStream(w io.Writer, trial string) *decisionStream {
	return &decisionStream{enc: json.NewEncoder(w), trial: trial, waiting: map[int]int{}, results: map[int]*DecisionResult{}}
}

// measuredDecision says whether d routed a measured request, whose record
// gives its outcome.
func measuredDecision(d virtual.Decision) bool { return !d.Warmup && d.ID >= 0 }

// add queues d and writes what it can.
func (s *decisionStream) add(d virtual.Decision) {
	s.queue = append(s.queue, d)
	if measuredDecision(d) {
		s.waiting[d.ID]++
	}
	s.flush()
}

// result takes a final measured record: the outcome of its request's
// decisions.
func (s *decisionStream) result(r *driver.RequestRecord) {
	if s.waiting[r.Index] == 0 {
		return
	}
	s.results[r.Index] = &DecisionResult{Success: r.Success, TTFTMs: r.TTFTMs, E2ELMs: r.E2ELMs,
		OutputTokens: r.OutputTokens, CachedTokens: r.CachedTokens}
	s.flush()
}

// flush writes the queued decisions up to the first still waiting for
// its outcome.
func (s *decisionStream) flush() {
	for s.head < len(s.queue) {
		d := s.queue[s.head]
		var res *DecisionResult
		if measuredDecision(d) {
			var ok bool
			if res, ok = s.results[d.ID]; !ok {
				s.compact()
				return
			}
			if s.waiting[d.ID]--; s.waiting[d.ID] == 0 {
				delete(s.waiting, d.ID)
				delete(s.results, d.ID)
			}
		}
		s.write(d, res)
		s.head++
	}
	s.queue, s.head = s.queue[:0], 0
}

// compact drops the written decisions from the queue's front once they
// are most of it.
func (s *decisionStream) compact() {
	if s.head > 1024 && s.head*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.head:]...)
		s.head = 0
	}
}

func (s *decisionStream) write(d virtual.Decision, res *DecisionResult) {
	if s.err != nil {
		return
	}
	if err := s.enc.Encode(DecisionLine{Trial: s.trial, Decision: d, Result: res}); err != nil {
		s.err = fmt.Errorf("recording decisions: %w", err)
	}
}

// close writes the decisions left, whose requests never became final (a
// run that failed), without an outcome, and reports the first write
// error.
func (s *decisionStream) close() error {
	for _, d := range s.queue[s.head:] {
		s.write(d, nil)
	}
	s.queue, s.head = nil, 0
	return s.err
}
