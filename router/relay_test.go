package router

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// discardWriter is a flushable ResponseWriter that keeps nothing.
type discardWriter struct {
	h       http.Header
	n       int
	flushes int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      { d.flushes++ }

// SetWriteDeadline is there because net/http's response writer has it:
// without it ResponseController reports ErrNotSupported, and building that
// error allocates on every event the real server never pays for.
func (d *discardWriter) SetWriteDeadline(time.Time) error { return nil }

// eventSource yields one SSE event per Read, as a streaming worker does,
// then a final event carrying usage.
type eventSource struct {
	ev, last []byte
	n        int
}

func (s *eventSource) Read(p []byte) (int, error) {
	switch {
	case s.n > 0:
		s.n--
		return copy(p, s.ev), nil
	case s.last != nil:
		n := copy(p, s.last)
		s.last = nil
		return n, nil
	}
	return 0, io.EOF
}

var (
	vllmEvent = []byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	lastEvent = []byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":100}}` + "\n\ndata: [DONE]\n\n")
)

func relayEvents(t testing.TB, n int) (*discardWriter, *usageTap) {
	w := &discardWriter{h: http.Header{}}
	tap := newUsageTap("text/event-stream")
	if rerr, werr := relayBody(w, &eventSource{ev: vllmEvent, last: lastEvent, n: n}, tap, true, time.Minute); rerr != nil || werr != nil {
		t.Fatalf("relay: %v %v", rerr, werr)
	}
	return w, tap
}

// TestStreamRelayAllocatesPerStreamNotPerEvent relays streams of 10 and
// 1000 events (vLLM's shape: "usage": null in every chunk) with per-run
// accounting on: the allocations must not grow with the event count, every
// event must be flushed, and the final usage must be found.
func TestStreamRelayAllocatesPerStreamNotPerEvent(t *testing.T) {
	w, tap := relayEvents(t, 1000)
	if w.flushes != 1001 || w.n != 1000*len(vllmEvent)+len(lastEvent) {
		t.Fatalf("relayed %d bytes in %d flushes", w.n, w.flushes)
	}
	if u := tap.Usage(); u == nil || u.PromptTokens != 7 || u.CompletionTokens != 100 {
		t.Fatalf("usage = %+v", u)
	}
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop recycled buffers; allocation counts need a run without -race")
	}
	few := testing.AllocsPerRun(50, func() { relayEvents(t, 10) })
	many := testing.AllocsPerRun(50, func() { relayEvents(t, 1000) })
	if many > few {
		t.Errorf("a 1000-event stream allocates %.0f times, a 10-event one %.0f: allocation per event", many, few)
	}
}

func TestHasUsage(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		`{"choices":[],"usage":null}`:                         false,
		`{"usage" :  null, "x": 1}`:                           false,
		`{"usage":{"prompt_tokens":1}}`:                       true,
		`{"usage" : {"prompt_tokens":1}}`:                     true,
		`{"text":"the \"usage\": {} of it","usage":null}`:     false,
		`{"text":"say \"usage\"","usage":{"x":1}}`:            true,
		`{"choices":[{"text":"usage"}]}`:                      false,
		`{"usage":null,"more":{"usage":{"prompt_tokens":2}}}`: true,
	} {
		if got := hasUsage([]byte(data)); got != want {
			t.Errorf("hasUsage(%s) = %v, want %v", data, got, want)
		}
	}
}

// BenchmarkStreamRelay relays a 100-event vLLM stream with per-run
// accounting (allocations reported per stream).
//
//	go test -run '^$' -bench StreamRelay -benchmem ./router/
func BenchmarkStreamRelay(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		relayEvents(b, 100)
	}
}

// TestRelayFlushesOnlyWhenAsked: a body of announced length is relayed
// whole without a flush per chunk (net/http sends it with the headers).
func TestRelayFlushesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	w := &discardWriter{h: http.Header{}}
	if rerr, werr := relayBody(w, &eventSource{ev: vllmEvent, last: lastEvent, n: 5}, nil, false, time.Minute); rerr != nil || werr != nil {
		t.Fatalf("relay: %v %v", rerr, werr)
	}
	if w.flushes != 0 || w.n != 5*len(vllmEvent)+len(lastEvent) {
		t.Fatalf("relayed %d bytes with %d flushes, want all bytes and none", w.n, w.flushes)
	}
}
