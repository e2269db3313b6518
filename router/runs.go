package router

import (
	"container/list"
	"net/http"
	"strings"
	"sync"
)

// maxRunIDLen bounds an X-Run-ID value; with max_run_ids it bounds the
// memory per-run series can take.
const maxRunIDLen = 200

// validRunID accepts what a label value and a log line can carry plainly:
// letters, digits and . _ - : / @ + = ,
func validRunID(s string) bool {
	if s == "" || len(s) > maxRunIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && !strings.ContainsRune("._-:/@+=,", rune(c)) {
			return false
		}
	}
	return true
}

func badRunID() *apiError {
	e := newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest,
		"X-Run-ID must be 1 to 200 characters of letters, digits and . _ - : / @ + = ,")
	e.Param = RunIDHeader
	return e
}

// runSeries owns the per-run series: at most max live run ids, the least
// recently used one (its three series deleted) making room for a new one.
// Updates and evictions share one lock, so an evicted run's series cannot
// be recreated behind the cap's back.
type runSeries struct {
	m   *metrics
	max int

	mu    sync.Mutex
	order *list.List // of run ids, most recent first
	index map[string]*list.Element
}

func newRunSeries(m *metrics, limit int) *runSeries {
	return &runSeries{m: m, max: limit, order: list.New(), index: map[string]*list.Element{}}
}

// record counts one admitted request of run id and its usage (may be nil).
func (s *runSeries) record(id string, u *usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.index[id]; ok {
		s.order.MoveToFront(e)
	} else {
		for s.order.Len() >= s.max {
			old := s.order.Remove(s.order.Back()).(string)
			delete(s.index, old)
			s.m.runRequests.DeleteLabelValues(old)
			s.m.runPrompt.DeleteLabelValues(old)
			s.m.runCompletion.DeleteLabelValues(old)
		}
		s.index[id] = s.order.PushFront(id)
	}
	s.m.runRequests.WithLabelValues(id).Inc()
	if u != nil && u.PromptTokens >= 0 && u.CompletionTokens >= 0 { // a counter cannot go down
		s.m.runPrompt.WithLabelValues(id).Add(float64(u.PromptTokens))
		s.m.runCompletion.WithLabelValues(id).Add(float64(u.CompletionTokens))
	}
}

// live is the number of run ids with series.
func (s *runSeries) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
