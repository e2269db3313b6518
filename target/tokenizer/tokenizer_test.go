package tokenizer

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTokenizeSplitsWordsAndPunctuation(t *testing.T) {
	got := Tokenize("Hello, the world!  42x")
	if len(got) != 6 {
		t.Fatalf("Tokenize gave %d ids %v, want 6 (Hello , the world ! 42x)", len(got), got)
	}
	if got[2] != slices.Index(vocabulary, "the") || got[1] != slices.Index(vocabulary, ",") {
		t.Fatalf("vocabulary words must map to their index: got %v", got)
	}
	if Count("Hello, the world!  42x") != len(got) {
		t.Fatal("Count disagrees with Tokenize")
	}
}

func TestTokenizeIsStableAndInRange(t *testing.T) {
	a := Tokenize("an unknownword and Another")
	b := Tokenize("an unknownword and Another")
	if !slices.Equal(a, b) {
		t.Fatalf("not deterministic: %v vs %v", a, b)
	}
	for _, id := range a {
		if id <= 0 || id >= VocabSize {
			t.Fatalf("id %d out of range (0, %d)", id, VocabSize)
		}
	}
}

func TestGenerateHasExactCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 17, 128, 2048} {
		text := Generate(r, n)
		if got := Count(text); got != n {
			t.Fatalf("Generate(%d) has %d tokens: %q", n, got, text)
		}
	}
}

func TestGenerateIsSeeded(t *testing.T) {
	a := Generate(rand.New(rand.NewPCG(7, 7)), 64)
	b := Generate(rand.New(rand.NewPCG(7, 7)), 64)
	c := Generate(rand.New(rand.NewPCG(7, 8)), 64)
	if a != b {
		t.Fatal("same seed gave different text")
	}
	if a == c {
		t.Fatal("different seeds gave the same text")
	}
}

func TestDetokenizeRoundTripsVocabularyText(t *testing.T) {
	text := "the model, the cache."
	if got := Detokenize(Tokenize(text)); got != text {
		t.Fatalf("Detokenize(Tokenize(%q)) = %q", text, got)
	}
	var streamed string
	for i, id := range Tokenize(text) {
		streamed += Piece(id, i == 0)
	}
	if streamed != text {
		t.Fatalf("concatenated pieces = %q, want %q", streamed, text)
	}
}

// TestFastPathMatchesUnicode holds the ASCII table and the inlined FNV-1a to
// the definitions they stand for: unicode classes for every rune below
// 0x3000, hash/fnv for pieces of every length class.
func TestFastPathMatchesUnicode(t *testing.T) {
	for r := rune(0); r < 0x3000; r++ {
		want := classOther
		if unicode.IsSpace(r) {
			want = classSpace
		} else if unicode.IsLetter(r) || unicode.IsDigit(r) {
			want = classWord
		}
		s := string(r)
		if !utf8.ValidRune(r) {
			continue
		}
		if got, size := class(s, 0); got != want || size != len(s) {
			t.Fatalf("class(%U) = %d, %d; want %d, %d", r, got, size, want, len(s))
		}
	}
	for _, p := range []string{"", "a", "zz", "unknownword", "ünïcödé", "42x", "\x00\xff"} {
		h := fnv.New32a()
		h.Write([]byte(p))
		if got := fnv32a(p); got != h.Sum32() {
			t.Fatalf("fnv32a(%q) = %d, hash/fnv gives %d", p, got, h.Sum32())
		}
	}
	text := "Héllo,\u00a0wörld!\u2003 ٣٤ tab\tnew\nline\u0085x"
	var pieces []string
	forEachPiece(text, func(p string) { pieces = append(pieces, p) })
	want := []string{"Héllo", ",", "wörld", "!", "٣٤", "tab", "new", "line", "x"}
	if !slices.Equal(pieces, want) {
		t.Fatalf("pieces of %q = %q, want %q", text, pieces, want)
	}
}

// TestVocabularyLookup: every word's id is its index; pieces outside the
// vocabulary hash into the rest of the id space.
func TestVocabularyLookup(t *testing.T) {
	for id, w := range vocabulary {
		if got := pieceID(w); got != id {
			t.Fatalf("pieceID(%q) = %d, want its index %d", w, got, id)
		}
	}
	for _, p := range []string{"unknownword", "Zyx", "42x", "é"} {
		h := fnv.New32a()
		h.Write([]byte(p))
		if got, want := pieceID(p), len(vocabulary)+int(h.Sum32()%uint32(VocabSize-len(vocabulary))); got != want || slices.Contains(vocabulary, p) {
			t.Fatalf("pieceID(%q) = %d, want hashed id %d", p, got, want)
		}
	}
}
