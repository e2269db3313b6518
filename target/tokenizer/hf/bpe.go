package hf

import (
	"container/heap"
	"unicode/utf8"
)

// symbol is one node of a word being merged: a token id and its
// neighbours in a doubly linked list (-1 at either end). A symbol merged
// into its left neighbour is dead.
type symbol struct {
	id         int
	prev, next int
	dead       bool
}

// candidate is a possible merge of the symbol at pos with the next one.
type candidate struct{ rank, pos, id int }

// candidates is a min-heap by rank, then position: the library's order.
type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	if c[i].rank != c[j].rank {
		return c[i].rank < c[j].rank
	}
	return c[i].pos < c[j].pos
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// encodeWord appends the ids of one pre-tokenized piece to ids.
func (b *bpe) encodeWord(ids []int, word string) []int {
	if word == "" {
		return ids
	}
	if b.ignoreMerges {
		if id, ok := b.vocab[word]; ok {
			return append(ids, id)
		}
	}
	syms := b.initialSymbols(word)
	b.mergeAll(syms)
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids
}

// initialSymbols splits word into characters, each its own token; a
// character outside the vocabulary becomes its UTF-8 bytes' <0xNN> tokens
// under byte fallback, else the unknown token (consecutive unknowns fused
// into one when fuse_unk is set), else it is dropped, as the library does.
func (b *bpe) initialSymbols(word string) []symbol {
	syms := make([]symbol, 0, len(word))
	add := func(id int) {
		n := len(syms)
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1})
	}
	lastUnk := false
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRuneInString(word[i:])
		ch := word[i : i+size]
		i += size
		if id, ok := b.vocab[ch]; ok {
			add(id)
			lastUnk = false
			continue
		}
		if b.byteFallback && b.allBytes(ch) {
			for k := range len(ch) {
				add(b.byteTokens[ch[k]])
			}
			lastUnk = false
			continue
		}
		if b.unk < 0 {
			continue
		}
		if !b.fuseUnk || !lastUnk {
			add(b.unk)
		}
		lastUnk = true
	}
	if n := len(syms); n > 0 {
		syms[n-1].next = -1
	}
	return syms
}

func (b *bpe) allBytes(ch string) bool {
	for k := range len(ch) {
		if b.byteTokens[ch[k]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll applies merges lowest rank first, leftmost first among equal
// ranks, until no adjacent pair has a merge.
func (b *bpe) mergeAll(syms []symbol) {
	q := make(candidates, 0, len(syms))
	push := func(pos int) {
		if pos < 0 {
			return
		}
		next := syms[pos].next
		if next < 0 {
			return
		}
		if m, ok := b.merges[pairKey(syms[pos].id, syms[next].id)]; ok {
			heap.Push(&q, candidate{rank: m.rank, pos: pos, id: m.id})
		}
	}
	for i := range syms {
		push(i)
	}
	for q.Len() > 0 {
		c := heap.Pop(&q).(candidate)
		s := &syms[c.pos]
		if s.dead || s.next < 0 {
			continue
		}
		right := &syms[s.next]
		// The pair may have changed since c was queued: merge only if
		// the current pair still yields c's token.
		if m, ok := b.merges[pairKey(s.id, right.id)]; !ok || m.id != c.id {
			continue
		}
		s.id = c.id
		right.dead = true
		s.next = right.next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		push(s.prev)
		push(c.pos)
	}
}
