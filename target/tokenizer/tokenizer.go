package tokenizer

import (
	"hash/fnv"
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

// forEachPiece calls fn for each token piece of text in order.
func forEachPiece(text string, fn func(string)) {
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case isWordRune(r):
			j := i + size
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isWordRune(r2) {
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

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func pieceID(p string) int {
	if id, ok := vocabIndex[p]; ok {
		return id
	}
	h := fnv.New32a()
	h.Write([]byte(p))
	return len(vocabulary) + int(h.Sum32()%uint32(VocabSize-len(vocabulary)))
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
