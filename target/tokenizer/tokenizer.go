package tokenizer

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// VocabSize is the size of the id space. Ids below len(vocabulary) are
// vocabulary words; ids at or above it are hashed pieces.
const VocabSize = 32768

// Tokenize returns the token ids of text.
func Tokenize(text string) []int {
	ids := make([]int, 0, len(text)/5+1)
	forEachPiece(text, func(p string) { ids = append(ids, pieceID(p)) })
	return ids
}

// Count returns the number of tokens in text without allocating the ids.
func Count(text string) int {
	n := 0
	forEachPiece(text, func(string) { n++ })
	return n
}

// forEachPiece calls fn for each token piece of text in order. ASCII bytes
// are classified by table (the driver and the engine tokenize every prompt,
// so this is on every request's path); other runes take the unicode path.
func forEachPiece(text string, fn func(string)) {
	i := 0
	for i < len(text) {
		c, size := byte(0), 1
		if b := text[i]; b < utf8.RuneSelf {
			c = asciiClass[b]
		} else {
			c, size = class(text, i)
		}
		switch c {
		case classSpace:
			i += size
		case classWord:
			j := i + size
			for j < len(text) {
				if b := text[j]; b < utf8.RuneSelf {
					if asciiClass[b] != classWord {
						break
					}
					j++
					continue
				}
				c2, s2 := class(text, j)
				if c2 != classWord {
					break
				}
				j += s2
			}
			fn(text[i:j])
			i = j
		default:
			fn(text[i : i+size])
			i += size
		}
	}
}

// Rune classes: white space separates, word runes join, any other rune is
// a piece of its own.
const (
	classOther byte = iota
	classSpace
	classWord
)

// asciiClass is classOf for every ASCII byte.
var asciiClass = func() (t [utf8.RuneSelf]byte) {
	for b := range t {
		t[b] = classOf(rune(b))
	}
	return t
}()

// class is the class and byte length of the rune at text[i:].
func class(text string, i int) (byte, int) {
	if b := text[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	return classOf(r), size
}

func classOf(r rune) byte {
	switch {
	case unicode.IsSpace(r):
		return classSpace
	case isWordRune(r):
		return classWord
	}
	return classOther
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func pieceID(p string) int {
	h := fnv32a(p)
	if id, ok := vocabID(p, h); ok {
		return id
	}
	return len(vocabulary) + int(h%uint32(VocabSize-len(vocabulary)))
}

// fnv32a is hash/fnv's 32-bit FNV-1a of p, without its allocation.
func fnv32a(p string) uint32 {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := 0; i < len(p); i++ {
		h ^= uint32(p[i])
		h *= prime
	}
	return h
}

// Word returns the text of a vocabulary id, or "" for an id outside the
// vocabulary (hashed pieces cannot be reversed).
func Word(id int) string {
	if id < 0 || id >= len(vocabulary) {
		return ""
	}
	return vocabulary[id]
}

// Words is the size of the vocabulary: ids in [FirstWord, Words()) are
// words a generator may emit.
func Words() int { return len(vocabulary) }

// Detokenize renders vocabulary ids as text: words separated by spaces,
// punctuation attached to the word before it. Ids outside the vocabulary
// render as "<id>" so nothing is silently dropped.
func Detokenize(ids []int) string {
	var b strings.Builder
	for i, id := range ids {
		b.WriteString(Piece(id, i == 0))
	}
	return b.String()
}

// Piece renders one id as it appears in a stream of text: with a leading
// space unless it is punctuation or the first piece. Streaming servers emit
// Piece per token so that concatenated deltas equal Detokenize.
func Piece(id int, first bool) string {
	w := Word(id)
	if w == "" {
		w = "<" + strconv.Itoa(id) + ">"
	}
	if first || isPunct(w) {
		return w
	}
	return " " + w
}

func isPunct(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return len(w) == 1 && !isWordRune(r)
}
