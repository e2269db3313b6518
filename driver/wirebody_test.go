package driver

import (
	"bytes"
	"testing"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Generated prompts are written into a body as they are (appendBody does
// not escape): every word the sim tokenizer generates, the period and the
// space need no JSON escape.
func TestGeneratedTextIsPlainJSON(t *testing.T) {
	for id := tokenizer.FirstWord; id < tokenizer.Words(); id++ {
		if w := tokenizer.Word(id); w == "" || !plainJSON(w) {
			t.Fatalf("word %d %q is empty or JSON escapes it", id, w)
		}
	}
	if !plainJSON(". ") {
		t.Fatal("JSON escapes the period or the space")
	}
}

// On the virtual clock's token path a streamed request keeps its prompt
// as parts and renders its body only to hash it: those bodies, the stream
// hash and the sent hash are Generate's, byte for byte, on seeded trace and
// random workloads (completions and chat, an extra_body, unique and shared
// prefixes), and every request but a trace's verbatim prompt takes the
// parts path.
func TestTokenPathBodiesAreGenerated(t *testing.T) {
	trace := lazyTrace(t)
	random := Workload{Kind: "random", PrefixLen: 24, InputLen: 30, OutputLen: 5, RangeRatio: 0.5}
	unique := random
	unique.UniquePrefixes = true
	extra := random
	extra.ExtraBody = map[string]any{"seed": 4, "user": "a <b>"}
	for _, c := range []struct {
		name string
		w    Workload
		n    int
	}{
		{"trace", Workload{Kind: "trace", Path: trace, BlockSize: 16}, 0},
		{"random", random, 60},
		{"random-unique", unique, 30},
		{"random-extra", extra, 30},
	} {
		for _, endpoint := range []string{CompletionsEndpoint, ChatEndpoint} {
			t.Run(c.name+endpoint, func(t *testing.T) {
				cfg := Config{BaseURL: "http://127.0.0.1:1", Endpoint: endpoint, Model: "m", Seed: 21, TrialID: "parts",
					SessionHeader: "x-session-id", NumPrompts: c.n, Workload: c.w, Arrival: Arrival{RequestRate: 8}}
				eager, st, src := generatedAndLazy(t, cfg)
				src.tokens = st.items.(workload.TokenItems) // the token path's source (tokenSource)
				bodies, direct := bodyHasher{t: st.render.template}, newSentDigest(nil)
				sent := newSentDigest(st.render.template)
				held := 0
				eachProduced(t, src, func(i int, got *Request) {
					want := &eager.Requests[i]
					if got.Body == nil {
						held++
					}
					if b := bodies.bytes(got.wire()); !bytes.Equal(b, want.Body) || got.InputTokens != want.InputTokens {
						t.Fatalf("request %d: body %q, %d tokens; Generate's %q, %d", i, b, got.InputTokens, want.Body, want.InputTokens)
					}
					sent.add(i, got.Session, got.wire())
					direct.add(i, want.Session, wireBody{bytes: want.Body})
				})
				want := len(eager.Requests)
				if c.name == "trace" {
					want-- // its verbatim prompt: not generated, rendered whole
				}
				if held != want {
					t.Fatalf("%d requests held their prompt as parts (no body), want %d", held, want)
				}
				if h, err := src.Hash(); err != nil || h != eager.Hash() {
					t.Fatalf("stream hash %s (%v), Generate's %s", h, err, eager.Hash())
				}
				if a, b := sent.sum(), direct.sum(); a != b {
					t.Fatalf("sent hash %s, of Generate's bodies %s", a, b)
				}
			})
		}
	}
}
