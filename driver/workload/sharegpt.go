package workload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/autoinfer/autoinfer/trials/field"
)

// vllm bench serve's ShareGPT filter (is_valid_sequence): prompts and
// outputs under minSeqLen tokens, prompts over maxPromptLen and pairs over
// maxTotalLen are skipped.
const (
	minSeqLen    = 4
	maxPromptLen = 1024
	maxTotalLen  = 2048
)

// shareGPTEntry is one conversation of a ShareGPT JSON file.
type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// shareGPT follows vllm bench serve: entries with at least two turns, in a
// seeded shuffle (unless disable_shuffle); the first turn is the prompt,
// the second the reference completion whose length is the output length
// unless output_len is set; pairs failing the length filter are skipped;
// when fewer than n remain, seeded draws with replacement fill up.
func (b builder) shareGPT() ([]Item, error) {
	entries, err := readShareGPT(b.w.Path)
	if err != nil {
		return nil, field.Errorf("path", "%s: %v", b.w.Path, err)
	}
	order := b.order(len(entries))
	var items []Item
	for _, k := range order {
		if b.n > 0 && len(items) == b.n {
			break
		}
		e := entries[k]
		prompt := e.Conversations[0].Value
		in := b.tok.Count(prompt)
		out := b.w.OutputLen
		if out == 0 {
			out = b.tok.Count(e.Conversations[1].Value)
		}
		if in < minSeqLen || (b.w.OutputLen == 0 && out < minSeqLen) || in > maxPromptLen || in+out > maxTotalLen {
			continue
		}
		it := single(len(items))
		it.Prompt, it.InputTokens, it.OutputTokens = prompt, in, out
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, field.Errorf("path", "%s: no conversation passes vllm's filter (prompt %d–%d tokens, prompt+output <= %d)", b.w.Path, minSeqLen, maxPromptLen, maxTotalLen)
	}
	return b.oversample(items), nil
}

// readShareGPT decodes the JSON array entry by entry (ShareGPT files run
// to hundreds of megabytes) and keeps those with two turns or more.
func readShareGPT(path string) ([]shareGPTEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("want a JSON array of conversations")
	}
	var out []shareGPTEntry
	for i := 0; dec.More(); i++ {
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if len(e.Conversations) >= 2 {
			out = append(out, e)
		}
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("end of array: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("no entry has a conversation of two turns or more")
	}
	return out, nil
}

// order returns the indices 0…n-1, shuffled by the seed unless
// disable_shuffle is set.
func (b builder) order(n int) []int {
	if !b.w.DisableShuffle {
		return b.src("shuffle", 0).Perm(n)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// oversample fills items up to n with seeded draws with replacement, as
// vllm's maybe_oversample_requests does, renumbering the copies.
func (b builder) oversample(items []Item) []Item {
	r := b.src("oversample", 0)
	have := len(items)
	for len(items) < b.n {
		it := items[r.IntN(have)]
		it.Session = len(items)
		items = append(items, it)
	}
	return items
}
