package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
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
				direct, sent := newSentDigest(), newSentDigest()
				held := 0
				eachProduced(t, src, func(i int, got *Request) {
					want := &eager.Requests[i]
					b := got.Body
					if b == nil {
						held++
						b = st.render.template.appendBody(nil, got.parts, got.MaxTokens)
					}
					if !bytes.Equal(b, want.Body) || got.InputTokens != want.InputTokens {
						t.Fatalf("request %d: body %q, %d tokens; Generate's %q, %d", i, b, got.InputTokens, want.Body, want.InputTokens)
					}
					if !got.sealed || !want.sealed || got.sum != want.sum {
						t.Fatalf("request %d: digest %x (sealed %v), Generate's %x (sealed %v)", i, got.sum, got.sealed, want.sum, want.sealed)
					}
					sent.add(i, got.Session, sumOf(got, nil))
					direct.add(i, want.Session, sumOf(want, want.Body))
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

// partsRecordSum is a parts body's digest as documented (bodySum): SHA-256
// of the tag, the template's digest, the generator's revision, max_tokens,
// the count of spans and each one's record.
func partsRecordSum(tpl *bodyTemplate, spans []tokenizer.Span, maxTokens int) bodySum {
	le := binary.LittleEndian
	tb := []byte{0}
	if tpl.promptFirst {
		tb[0] = 1
	}
	for _, p := range tpl.parts {
		tb = append(le.AppendUint64(tb, uint64(len(p))), p...)
	}
	ts := sha256.Sum256(tb)
	r := append([]byte(partsTag), ts[:]...)
	r = append(le.AppendUint64(r, uint64(len(workload.SimPrompts))), workload.SimPrompts...)
	r = le.AppendUint64(le.AppendUint64(r, uint64(maxTokens)), uint64(len(spans)))
	for _, s := range spans {
		if s.Key != 0 {
			r = le.AppendUint64(le.AppendUint64(append(r, 1), s.Key), uint64(s.Len()))
			continue
		}
		var ids []byte
		for _, id := range s.IDs {
			ids = le.AppendUint16(ids, id)
		}
		sum := sha256.Sum256(ids)
		r = append(append(r, 0), sum[:]...)
	}
	return sha256.Sum256(r)
}

// A parts body's digest is the documented one, the same for a shared
// span drawn or blind (its Key and length, not its ids), and it changes
// when any one id of a span of its own changes (first, middle or last),
// when a shared span's Key (its source: seed, hash id) or length changes,
// with max_tokens, with the template, and when a span moves to another
// place.
func TestPartsSumFollowsEveryByte(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	draw := func(n int) []uint16 { _, ids := tokenizer.GenerateIDs[uint16](r, n, nil); return ids }
	spans := []tokenizer.Span{{IDs: draw(40)}, {IDs: draw(16), Key: 7}, {IDs: draw(3)}, {IDs: draw(200)}}
	blind := slices.Clone(spans)
	blind[1] = tokenizer.Span{Key: 7, Blind: 16}
	for _, endpoint := range []string{CompletionsEndpoint, ChatEndpoint} {
		tpl := newRenderer(Config{Endpoint: endpoint, Model: "m", Workload: Workload{IgnoreEOS: new(bool)}}).template
		sums := newBodySums(tpl)
		want := partsRecordSum(tpl, spans, 17)
		for round, ss := range [][]tokenizer.Span{spans, spans, blind} {
			if got := sums.partsSum(ss, 17); got != want {
				t.Fatalf("%s round %d: digest %x, the definition's %x", endpoint, round, got, want)
			}
		}
		seen := map[bodySum]string{want: "the original"}
		differ := func(what string, got bodySum) {
			t.Helper()
			if prev, ok := seen[got]; ok {
				t.Fatalf("%s %s: the digest equals that of %s", endpoint, what, prev)
			}
			seen[got] = what
		}
		for j, s := range spans {
			if s.Key != 0 {
				continue
			}
			for _, at := range []int{0, len(s.IDs) / 2, len(s.IDs) - 1} {
				changed := slices.Clone(spans)
				changed[j].IDs = slices.Clone(s.IDs)
				changed[j].IDs[at] ^= 1
				differ(fmt.Sprintf("span %d id %d", j, at), sums.partsSum(changed, 17))
			}
		}
		for what, s := range map[string]tokenizer.Span{"another key": {Key: 8, Blind: 16}, "another length": {Key: 7, Blind: 15}} {
			changed := slices.Clone(blind)
			changed[1] = s
			differ(what, sums.partsSum(changed, 17))
		}
		differ("max_tokens 18", sums.partsSum(spans, 18))
		differ("spans swapped", sums.partsSum([]tokenizer.Span{spans[2], spans[0], spans[1], spans[3]}, 17))
		other := newRenderer(Config{Endpoint: endpoint, Model: "n", Workload: Workload{IgnoreEOS: new(bool)}}).template
		differ("another model", newBodySums(other).partsSum(spans, 17))
	}
}
