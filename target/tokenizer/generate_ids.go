package tokenizer

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"unsafe"
)

// period is the id of ".", the sentence end Generate places.
const period = 1

// spacedWord is a vocabulary word after its separating space, in a
// fixed-width array: GenerateIDs writes one with a single 16-byte store
// and keeps its length, with no copy sized per word (the words are about
// five bytes: a sized copy per word was most of drawing a prompt's text).
type spacedWord struct {
	b [16]byte
	n int // len(" "+word); 0 for a word too long for b
}

// spaced is every vocabulary word as a spacedWord, by id. Derived once
// from vocabulary, never written afterwards.
var spaced = func() []spacedWord {
	s := make([]spacedWord, len(vocabulary))
	for i, w := range vocabulary {
		if 1+len(w) <= len(s[i].b) {
			s[i].b[0] = ' '
			s[i].n = 1 + copy(s[i].b[1:], w)
		}
	}
	return s
}()

// ID is a token id as GenerateIDs writes it: an int, or two bytes (every
// id a generator emits is below VocabSize), so a prompt's ids cached or
// shared by many prompts take a quarter of the room.
type ID interface{ ~int | ~uint16 }

// wordsPerDraw is how many words GenerateIDs takes from one 64-bit draw:
// each is the high half of the draw's remainder times the number of
// words, the low half the remainder the next is taken from (a chained
// multiply-shift). Each word alone is uniform (the remainder is the draw
// times an odd number, mod 2^64), and the five together are uniform over
// every five-word sequence to within 2^-21 of its probability (2^64 draws
// over 383^5 sequences). A draw per word was the larger part of drawing a
// prompt, the larger part of the driver's share of a virtual trace run.
const wordsPerDraw = 5

// GenerateIDs draws a workload's prompt of exactly n tokens with r: its
// text, natural-looking as Generate's (vocabulary words, a period every
// 8–20), and its token ids, Tokenize(text) without tokenizing it. The
// virtual clock hands a simulated engine these ids instead of a body it
// would parse and tokenize again; the text path draws the same text
// (driver/workload's Sim). Its words come wordsPerDraw to a draw, so its
// text for an r is not Generate's, which keeps one draw per word for the
// seeded prompts of calibration probes and quality gates. The ids are
// appended to ids (a prompt's drawn block by block goes into one slice).
func GenerateIDs[T ID](r *rand.Rand, n int, ids []T) (string, []T) {
	if n <= 0 {
		return "", ids
	}
	// Every word is written after a space and the text starts after the
	// first one (the first token is always a word); the room past the
	// usual length lets the last words take the fixed-width store too.
	buf := make([]byte, 0, 1+n*6+len(spacedWord{}.b))
	from := len(ids)
	ids = slices.Grow(ids, n)[:from+n]
	out := ids[from:] // indexed, not appended: no capacity check per token
	words := uint64(len(vocabulary) - FirstWord)
	var x uint64 // the draw the next words come from
	left := 0    // words x has left
	untilStop := 8 + r.IntN(13)
	for i := range out {
		// A period is its own token: place one only when a word follows it
		// would not be required, i.e. it still counts towards n.
		if untilStop == 0 && i > 0 && i < n-1 {
			buf = append(buf, '.')
			out[i] = period
			untilStop = 8 + r.IntN(13)
			continue
		}
		if left == 0 {
			x, left = r.Uint64(), wordsPerDraw
		}
		w, rest := bits.Mul64(x, words)
		x, left = rest, left-1
		id := FirstWord + int(w)
		buf = appendSpaced(buf, id)
		out[i] = T(id)
		untilStop--
	}
	return unsafe.String(&buf[1], len(buf)-1), ids
}

// appendSpaced appends " " and word id to buf: one fixed-width store when
// buf has room for it, else an ordinary append.
func appendSpaced(buf []byte, id int) []byte {
	w := &spaced[id]
	l := len(buf)
	if w.n == 0 || cap(buf)-l < len(w.b) {
		return append(append(buf, ' '), vocabulary[id]...)
	}
	*(*[16]byte)(buf[l : l+len(w.b)]) = w.b
	return buf[:l+w.n]
}
