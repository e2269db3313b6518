package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/autoinfer/autoinfer/trials/field"
)

// customLine is one line of a custom dataset (vllm's --dataset-name
// custom): a prompt and an optional output length.
type customLine struct {
	Prompt       string `json:"prompt"`
	OutputTokens *int   `json:"output_tokens"`
	line         int    // in the file, 1-based
}

// custom reads a JSON Lines file of prompts: in a seeded shuffle unless
// disable_shuffle, the first n lines (n = 0: all), each asking for its
// output_tokens or else output_len (256); when the file has fewer than n
// lines, seeded draws with replacement fill up, as vllm does. Other keys
// on a line are ignored, as vllm ignores them.
func (b builder) custom() ([]Item, error) {
	lines, err := readCustom(b.w.Path)
	if err != nil {
		return nil, field.Errorf("path", "%s: %v", b.w.Path, err)
	}
	var items []Item
	for _, k := range b.order(len(lines)) {
		if b.n > 0 && len(items) == b.n {
			break
		}
		l := lines[k]
		it := single(len(items))
		it.Prompt, it.InputTokens, it.OutputTokens, it.Line = l.Prompt, b.tok.Count(l.Prompt), b.w.OutputLen, l.line
		if l.OutputTokens != nil {
			it.OutputTokens = *l.OutputTokens
		}
		items = append(items, it)
	}
	return b.oversample(items), nil
}

func readCustom(path string) ([]customLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []customLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for no := 1; sc.Scan(); no++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l customLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		l.line = no
		if l.Prompt == "" {
			return nil, fmt.Errorf("line %d: prompt: required", no)
		}
		if l.OutputTokens != nil && *l.OutputTokens <= 0 {
			return nil, fmt.Errorf("line %d: output_tokens: must be > 0, got %d", no, *l.OutputTokens)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no prompts")
	}
	return out, nil
}
