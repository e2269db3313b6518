package driver

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// chunkedBody returns its chunks one per Read, as a connection delivers
// what arrived together.
type chunkedBody struct{ chunks []string }

func (c *chunkedBody) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

const tokenEvent = "data: {\"choices\":[{\"index\":0,\"text\":\" t\"}],\"usage\":null}\n\n"

// tick is a clock that moves 1 ms per reading.
func tick() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// TestBurstsAreEventsAlreadyWaiting: events that arrive one per read are
// not bursts; events found in the client's buffers behind an earlier one
// (several in one read) are, except the first of each read.
func TestBurstsAreEventsAlreadyWaiting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		chunks []string
		itls   int
		bursts int
	}{
		{"one per read", []string{tokenEvent, tokenEvent, tokenEvent, tokenEvent, "data: [DONE]\n\n"}, 3, 0},
		{"three behind one", []string{tokenEvent, tokenEvent + tokenEvent + tokenEvent, "data: [DONE]\n\n"}, 3, 2},
		{"all at once", []string{strings.Repeat(tokenEvent, 5) + "data: [DONE]\n\n"}, 4, 4},
		{"usage chunk behind the last token is no ITL", []string{tokenEvent, tokenEvent +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"}, 1, 0},
	} {
		x := &exchange{}
		x.readEvents(context.Background(), &chunkedBody{chunks: append([]string(nil), tc.chunks...)}, tick())
		if x.errType != "" {
			t.Fatalf("%s: %s %s", tc.name, x.errType, x.errMsg)
		}
		if len(x.itls) != tc.itls || x.bursts != tc.bursts {
			t.Errorf("%s: %d ITLs, %d bursts; want %d and %d", tc.name, len(x.itls), x.bursts, tc.itls, tc.bursts)
		}
	}
}

// BenchmarkReadEvents is the client's cost per streamed event (one per
// read, vLLM's completion chunk): decoding, timestamping, text.
//
//	go test -run '^$' -bench ReadEvents -benchmem ./driver/
func BenchmarkReadEvents(b *testing.B) {
	const events = 256
	ev := "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" word\",\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n"
	chunks := make([]string, events+1)
	for i := range events {
		chunks[i] = ev
	}
	chunks[events] = "data: [DONE]\n\n"
	b.ReportAllocs()
	for b.Loop() {
		x := &exchange{}
		x.readEvents(context.Background(), &chunkedBody{chunks: append([]string(nil), chunks...)}, time.Now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

// TestMalformedEventsFailTheStream: a chunk that is not one JSON object
// (cut short, or followed by more data) fails the request as a stream
// error, like json.Unmarshal would; text from a previous chunk never leaks
// into a later one through the reused decoding state.
func TestMalformedEventsFailTheStream(t *testing.T) {
	t.Parallel()
	for name, ev := range map[string]string{
		"cut short":     "data: {\"choices\":[{\"text\":\"a\"}\n\n",
		"trailing data": "data: {\"choices\":[{\"text\":\"a\"}]} {\"x\":1}\n\n",
		"not json":      "data: hello\n\n",
	} {
		x := &exchange{}
		x.readEvents(context.Background(), &chunkedBody{chunks: []string{tokenEvent, ev, tokenEvent, "data: [DONE]\n\n"}}, tick())
		if x.errType != errStream {
			t.Errorf("%s: error type %q, want %q", name, x.errType, errStream)
		}
	}
	x := &exchange{}
	x.readEvents(context.Background(), &chunkedBody{chunks: []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"one\"}},{\"delta\":{\"content\":\"x\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", "data: [DONE]\n\n"}}, tick())
	if got := x.text.String(); got != "one" {
		t.Errorf("text %q, want %q", got, "one")
	}
}
