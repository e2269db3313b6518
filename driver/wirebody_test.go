package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

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

// partsRecordSum is a parts body's digest as docs/workloads.md defines it,
// written apart from bodySums: SHA-256 of the tag, the template's digest,
// max_tokens, the count of non-empty parts and each one's SHA-256.
func partsRecordSum(tpl *bodyTemplate, parts []string, maxTokens int) bodySum {
	le := binary.LittleEndian
	tb := []byte{0}
	if tpl.promptFirst {
		tb[0] = 1
	}
	for _, p := range tpl.parts {
		tb = append(le.AppendUint64(tb, uint64(len(p))), p...)
	}
	ts := sha256.Sum256(tb)
	var sums [][32]byte
	for _, p := range parts {
		if p != "" {
			sums = append(sums, sha256.Sum256([]byte(p)))
		}
	}
	r := append([]byte(partsTag), ts[:]...)
	r = le.AppendUint64(le.AppendUint64(r, uint64(maxTokens)), uint64(len(sums)))
	for _, s := range sums {
		r = append(r, s[:]...)
	}
	return sha256.Sum256(r)
}

// A parts body's digest is the documented one, whether its parts are
// digested cold, found in the memo or made again as new strings, and it
// changes when any single byte of any one part changes (first, middle or
// last, of a part the memo holds or not), with max_tokens, with the
// template, and when a part moves to another place; empty parts count for
// nothing, as they add nothing to the body (workload.Join).
func TestPartsSumFollowsEveryByte(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	parts := []string{tokenizer.Generate(r, 40), "", tokenizer.Generate(r, 3), tokenizer.Generate(r, 200)}
	for _, endpoint := range []string{CompletionsEndpoint, ChatEndpoint} {
		tpl := newRenderer(Config{Endpoint: endpoint, Model: "m", Workload: Workload{IgnoreEOS: new(bool)}}).template
		sums := newBodySums(tpl)
		want := partsRecordSum(tpl, parts, 17)
		for round, ps := range [][]string{parts, parts, copies(parts), append(copies(parts), "")} {
			if got := sums.partsSum(ps, 17); got != want {
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
		for j, p := range parts {
			for _, at := range []int{0, len(p) / 2, len(p) - 1} {
				if p == "" {
					continue
				}
				b := []byte(p)
				b[at] ^= 1
				changed := slices.Clone(parts)
				changed[j] = string(b)
				differ(fmt.Sprintf("part %d byte %d", j, at), sums.partsSum(changed, 17))
			}
		}
		differ("max_tokens 18", sums.partsSum(parts, 18))
		differ("parts swapped", sums.partsSum([]string{parts[2], parts[0], parts[3]}, 17))
		other := newRenderer(Config{Endpoint: endpoint, Model: "n", Workload: Workload{IgnoreEOS: new(bool)}}).template
		differ("another model", newBodySums(other).partsSum(parts, 17))
	}
}

// copies is parts made again as new strings of the same bytes.
func copies(parts []string) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = strings.Clone(p)
	}
	return out
}

// The parts memo never holds more than its bounds, keeps the part in use
// (found in the older generation, it moves to the newer), and gives every
// part its own SHA-256 however often it was dropped.
func TestPartSumsBounded(t *testing.T) {
	var m partSums
	hot := strings.Repeat("hot ", 100)
	big := strings.Repeat("b", maxMemoBytes/16)
	for i := range 3 * maxMemoParts {
		p := strconv.Itoa(i)
		if i%97 == 0 {
			p = strings.Clone(big) // large parts: the byte bound
		}
		if m.sum(p) != sha256.Sum256([]byte(p)) {
			t.Fatalf("part %d: wrong digest", i)
		}
		if i%128 == 0 && m.sum(hot) != sha256.Sum256([]byte(hot)) {
			t.Fatal("the hot part: wrong digest")
		}
		n, bytes := len(m.cur)+len(m.old), m.curBytes
		for k := range m.old {
			bytes += k.n
		}
		if n > maxMemoParts || bytes > maxMemoBytes {
			t.Fatalf("after %d parts the memo holds %d parts of %d bytes, bounds %d and %d", i+1, n, bytes, maxMemoParts, maxMemoBytes)
		}
	}
	k := partKey{unsafe.StringData(hot), len(hot)}
	_, cur := m.cur[k]
	_, old := m.old[k]
	if !cur && !old {
		t.Error("the part in use fell out of the memo")
	}
}
