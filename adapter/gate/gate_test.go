package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// hangBound is how long a server holds an answer waiting for company: a
// failure bound, not a latency threshold.
const hangBound = 10 * time.Second

// logprobServer answers completions with logprobs that depend only on the
// prompt (shifted when skew is set, so the two sides differ), and records
// the most requests it had in flight at once. Every request waits until
// `hold` requests are in flight (at most hangBound), so a gate that sends
// concurrently is seen doing so.
type logprobServer struct {
	skew bool
	hold int

	mu       sync.Mutex
	inFlight int
	maxSeen  int
	gathered chan struct{}
	once     sync.Once
}

func (s *logprobServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt string `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.inFlight++
	s.maxSeen = max(s.maxSeen, s.inFlight)
	if s.inFlight >= s.hold {
		s.once.Do(func() { close(s.gathered) })
	}
	s.mu.Unlock()
	select {
	case <-s.gathered:
	case <-r.Context().Done():
	case <-time.After(hangBound):
	}
	p := 0.5 + float64(len(req.Prompt)%7)/20
	if s.skew {
		p -= 0.1
	}
	fmt.Fprintf(w, `{"choices":[{"logprobs":{"tokens":["a","b"],"top_logprobs":[{"a":%g,"b":%g},{"a":%g,"b":%g}]}}]}`,
		math.Log(p), math.Log(1-p), math.Log(1-p), math.Log(p))
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
}

func newLogprobServer(t *testing.T, skew bool, hold int) (*logprobServer, string) {
	s := &logprobServer{skew: skew, hold: hold, gathered: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// TestRunSendsConcurrentlyAndComparesInOrder: with the default bound, the
// four prompts reach each side at once (each server holds its answers until
// four requests are in flight, so a sequential gate could not finish), and
// the per-prompt KLs are in prompt order whatever the arrival order; a bound
// of 1 gives the same figures.
func TestRunSendsConcurrentlyAndComparesInOrder(t *testing.T) {
	t.Parallel()
	texts := []string{"a", "bb", "ccc", "dddd"}
	cfg := Config{Model: "m", MaxTokens: 2, TopLogprobs: 2, KLThreshold: 1, Texts: texts}
	ref, refURL := newLogprobServer(t, false, 4)
	cand, candURL := newLogprobServer(t, true, 4)
	got, err := Run(context.Background(), http.DefaultClient, candURL, refURL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ref.maxSeen != 4 || cand.maxSeen != 4 {
		t.Errorf("in flight at once: reference %d, deployment %d; want all 4 prompts", ref.maxSeen, cand.maxSeen)
	}
	_, refURL1 := newLogprobServer(t, false, 1)
	_, candURL1 := newLogprobServer(t, true, 1)
	cfg.Concurrency = 1
	seq, err := Run(context.Background(), http.DefaultClient, candURL1, refURL1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.PerPromptKL) != fmt.Sprint(seq.PerPromptKL) || got.KLMean != seq.KLMean || got.KLMean <= 0 {
		t.Errorf("concurrent KLs %v (mean %g) differ from sequential %v (mean %g)", got.PerPromptKL, got.KLMean, seq.PerPromptKL, seq.KLMean)
	}
	// Distinct prompts give distinct KLs, so the order is checked too.
	if got.PerPromptKL[0] == got.PerPromptKL[1] {
		t.Errorf("per-prompt KLs %v do not tell prompts apart", got.PerPromptKL)
	}
}

// TestRunReportsTheFirstFailureInPromptOrder: when the deployment refuses
// one prompt, the error names that prompt and side, not a request the
// failure cancelled.
func TestRunReportsTheFirstFailureInPromptOrder(t *testing.T) {
	t.Parallel()
	_, refURL := newLogprobServer(t, false, 1)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Prompt == "ccc" {
			http.Error(w, `{"error":{"message":"nope"}}`, http.StatusBadRequest)
			return
		}
		<-r.Context().Done() // the others hang until the gate gives up on them
	}))
	t.Cleanup(bad.Close)
	cfg := Config{Model: "m", MaxTokens: 2, TopLogprobs: 2, KLThreshold: 1, Texts: []string{"a", "bb", "ccc", "dddd"}}
	_, err := Run(context.Background(), http.DefaultClient, bad.URL, refURL, cfg)
	if err == nil || !strings.Contains(err.Error(), "gate prompt 2 on deployment") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("err = %v, want prompt 2 on the deployment with its 400", err)
	}
}
