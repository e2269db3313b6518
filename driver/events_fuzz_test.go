package driver

import (
	"context"
	"testing"
)

// The SSE reader takes any stream, in any chunking, without panicking:
// it ends with an error type or with at least one chunk with choices, and
// never with more inter-token latencies than events.
func FuzzReadEvents(f *testing.F) {
	f.Add(tokenEvent+tokenEvent+"data: [DONE]\n\n", 7)
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n", 3)
	f.Add("data: {\"error\":{\"message\":\"m\",\"type\":\"t\"}}\n\n", 5)
	f.Add(": comment\nevent: x\ndata: hello\n\n", 1)
	f.Add("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-1}}\n\n", 100)
	f.Fuzz(func(t *testing.T, stream string, chunk int) {
		chunk = max(1, chunk%4096)
		var chunks []string
		for s := stream; s != ""; {
			n := min(chunk, len(s))
			chunks, s = append(chunks, s[:n]), s[n:]
		}
		x := &exchange{}
		x.readEvents(context.Background(), &chunkedBody{chunks: chunks}, tick())
		if x.errType == "" && x.first.IsZero() {
			t.Fatalf("no error and no first chunk for %q", stream)
		}
		if len(x.itls) > len(stream)/6 {
			t.Fatalf("%d ITLs from %d bytes", len(x.itls), len(stream))
		}
	})
}
