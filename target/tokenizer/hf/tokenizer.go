package hf

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Tokenizer encodes and decodes text as one tokenizer.json does. It is
// immutable after Load and safe for concurrent use.
type Tokenizer struct {
	model   *bpe
	norms   []normalizer
	pretoks []preTokenizer
	added   []addedToken // longest content first
	addedID map[int]bool
	decoder decoder
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type fileJSON struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        modelJSON       `json:"model"`
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from tokenizer.json's content. Anything it
// cannot reproduce exactly is an error naming the component.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decoding tokenizer.json: %w", err)
	}
	m, err := newBPE(f.Model)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{model: m, addedID: map[int]bool{}}
	if t.norms, err = newNormalizers(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.pretoks, err = newPreTokenizers(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if t.decoder, err = newDecoder(f.Decoder); err != nil {
		return nil, err
	}
	for i, a := range f.AddedTokens {
		if a.Content == "" || a.ID < 0 {
			return nil, fmt.Errorf("added_tokens[%d]: needs content and an id >= 0", i)
		}
		if a.SingleWord {
			return nil, fmt.Errorf("added_tokens[%d]: single_word tokens are not supported (%q)", i, a.Content)
		}
		t.added = append(t.added, a)
		t.addedID[a.ID] = true
		if a.ID >= len(m.tokens) {
			m.tokens = append(m.tokens, make([]string, a.ID+1-len(m.tokens))...)
		}
		m.tokens[a.ID] = a.Content
	}
	slices.SortStableFunc(t.added, func(a, b addedToken) int { return len(b.Content) - len(a.Content) })
	return t, nil
}

// VocabSize is one more than the largest id, added tokens included.
func (t *Tokenizer) VocabSize() int { return len(t.model.tokens) }

// Ordinary returns the ids a prompt generator may draw: every assigned id
// that is not an added (special or control) token, in increasing order.
func (t *Tokenizer) Ordinary() []int {
	out := make([]int, 0, len(t.model.tokens))
	for id, tok := range t.model.tokens {
		if tok != "" && !t.addedID[id] {
			out = append(out, id)
		}
	}
	return out
}

// Count is len(Encode(text)).
func (t *Tokenizer) Count(text string) int { return len(t.Encode(text)) }

// Encode returns text's ids without special tokens added around them
// (added tokens written in the text are still recognised).
func (t *Tokenizer) Encode(text string) []int {
	var ids []int
	for _, seg := range t.splitAdded(text) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		ids = t.encodeSegment(ids, seg.text, seg.start)
	}
	return ids
}

func (t *Tokenizer) encodeSegment(ids []int, text string, atStart bool) []int {
	var err error
	for _, n := range t.norms {
		if text, err = n(text); err != nil {
			return ids // regexp2 fails only on its match timeout, which is unset
		}
	}
	pieces := []piece{{text: text, first: atStart}}
	for _, p := range t.pretoks {
		if pieces, err = p(pieces); err != nil {
			return ids
		}
	}
	for _, p := range pieces {
		ids = t.model.encodeWord(ids, p.text)
	}
	return ids
}

// segment is a stretch of input: an added token (id >= 0) or text to
// encode (id -1). start is set for text at the very start of the input.
type segment struct {
	text  string
	id    int
	start bool
}

// splitAdded cuts text at every added token, leftmost first and the
// longest token at a position, honouring lstrip and rstrip (the token
// swallows the white space on that side).
func (t *Tokenizer) splitAdded(text string) []segment {
	var out []segment
	pos, from := 0, 0
	for pos < len(text) {
		a, ok := t.addedAt(text, pos)
		if !ok {
			pos++
			continue
		}
		left, right := pos, pos+len(a.Content)
		if a.LStrip {
			left = len(strings.TrimRight(text[from:left], " \t\n\r")) + from
		}
		if a.RStrip {
			right = len(text) - len(strings.TrimLeft(text[right:], " \t\n\r"))
		}
		if left > from {
			out = append(out, segment{text: text[from:left], id: -1, start: from == 0})
		}
		out = append(out, segment{id: a.ID})
		pos, from = right, right
	}
	if from < len(text) {
		out = append(out, segment{text: text[from:], id: -1, start: from == 0})
	}
	return out
}

func (t *Tokenizer) addedAt(text string, pos int) (addedToken, bool) {
	for _, a := range t.added {
		if strings.HasPrefix(text[pos:], a.Content) {
			return a, true
		}
	}
	return addedToken{}, false
}
