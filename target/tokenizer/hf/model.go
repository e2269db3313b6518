package hf

import (
	"encoding/json"
	"fmt"
	"strings"
)

// bpe is a BPE model: the vocabulary, the merge ranks and the flags that
// change how a word becomes its initial symbols.
type bpe struct {
	vocab  map[string]int
	tokens []string // by id; "" for ids the file leaves unassigned
	// merges maps a pair of symbol ids to its rank and the merged id.
	merges       map[uint64]merge
	unk          int // -1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	// byteTokens are the ids of <0x00>…<0xFF> for byte fallback (-1: absent).
	byteTokens [256]int
}

type merge struct{ rank, id int }

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
}

func newBPE(m modelJSON) (*bpe, error) {
	if m.Type != "BPE" {
		return nil, fmt.Errorf("model.type: %q is not supported (only BPE)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("model.dropout: %v: BPE dropout is random, so counts would not be reproducible", *m.Dropout)
	}
	if p := m.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("model.continuing_subword_prefix: %q is not supported", *p)
	}
	if s := m.EndOfWordSuffix; s != nil && *s != "" {
		return nil, fmt.Errorf("model.end_of_word_suffix: %q is not supported", *s)
	}
	b := &bpe{vocab: m.Vocab, unk: -1, fuseUnk: m.FuseUnk, byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges}
	size := 0
	for _, id := range m.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab: negative id %d", id)
		}
		size = max(size, id+1)
	}
	b.tokens = make([]string, size)
	for tok, id := range m.Vocab {
		b.tokens[id] = tok
	}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model.unk_token: %q is not in the vocabulary", *m.UnkToken)
		}
		b.unk = id
	}
	for i := range b.byteTokens {
		b.byteTokens[i] = -1
		if id, ok := m.Vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteTokens[i] = id
		}
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		l, lok := m.Vocab[p[0]]
		r, rok := m.Vocab[p[1]]
		id, ok := m.Vocab[p[0]+p[1]]
		if !lok || !rok || !ok {
			return nil, fmt.Errorf("model.merges[%d]: %q + %q: a part or the result is not in the vocabulary", rank, p[0], p[1])
		}
		if _, dup := b.merges[pairKey(l, r)]; !dup {
			b.merges[pairKey(l, r)] = merge{rank: rank, id: id}
		}
	}
	return b, nil
}

// parseMerges accepts both encodings: "a b" strings (older files) and
// ["a", "b"] pairs (newer files, which allow spaces inside tokens).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("model.merges[%d]: %q is not two tokens separated by a space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: want strings or pairs of strings: %w", err)
	}
	return pairs, nil
}
