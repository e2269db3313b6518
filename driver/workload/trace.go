package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// TraceLine is one request of a trace file (JSON Lines). The names follow
// Mooncake's public traces, so those replay as they are.
type TraceLine struct {
	// Timestamp is the arrival time in milliseconds (any origin).
	Timestamp *float64 `json:"timestamp,omitempty"`
	// Prompt is sent verbatim; otherwise InputLength tokens are generated.
	Prompt      string `json:"prompt,omitempty"`
	InputLength int    `json:"input_length,omitempty"`
	// OutputLength is max_tokens.
	OutputLength int `json:"output_length"`
	// SessionID groups requests under one session header.
	SessionID string `json:"session_id,omitempty"`
	// HashIDs name the prompt's blocks of block_size tokens: equal ids give
	// equal text, so prefix sharing in the trace is reproduced.
	HashIDs []int `json:"hash_ids,omitempty"`
}

// ReadTrace parses a JSONL trace strictly: unknown keys are errors, and
// each error names its line.
func ReadTrace(r io.Reader) ([]TraceLine, error) {
	var lines []TraceLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for no := 1; sc.Scan(); no++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l TraceLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		if err := l.validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading trace: %w", err)
	}
	if len(lines) == 0 {
		return nil, errors.New("trace has no requests")
	}
	return lines, nil
}

func (l TraceLine) validate() error {
	switch {
	case l.OutputLength <= 0:
		return fmt.Errorf("output_length: must be > 0, got %d", l.OutputLength)
	case l.Prompt != "" && (l.InputLength != 0 || len(l.HashIDs) > 0):
		return errors.New("prompt: give either prompt or input_length (with optional hash_ids), not both")
	case l.Prompt == "" && l.InputLength <= 0:
		return errors.New("input_length: must be > 0 when there is no prompt")
	case l.Timestamp != nil && *l.Timestamp < 0:
		return fmt.Errorf("timestamp: must be >= 0, got %v", *l.Timestamp)
	}
	return nil
}

func (b builder) trace() ([]Item, error) {
	w, n, src := b.w, b.n, b.src
	f, err := os.Open(w.Path)
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	defer f.Close()
	lines, err := ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("path: %s: %w", w.Path, err)
	}
	if n > len(lines) {
		return nil, fmt.Errorf("num_prompts: %d requested but the trace has %d requests", n, len(lines))
	}
	if n > 0 {
		lines = lines[:n]
	}
	timed := !w.IgnoreTimestamps
	for _, l := range lines {
		timed = timed && l.Timestamp != nil
	}
	blocks := map[int]string{}
	sessions := map[string]int{}
	items := make([]Item, len(lines))
	for i, l := range lines {
		it := single(i)
		if l.SessionID != "" {
			if first, ok := sessions[l.SessionID]; ok {
				it.Session = first
			} else {
				sessions[l.SessionID] = i
			}
		}
		it.OutputTokens = l.OutputLength
		if l.Prompt != "" {
			it.Prompt = l.Prompt
		} else {
			it.Prompt = blockPrompt(b.tok, l, w.BlockSize, blocks, src, i)
		}
		it.InputTokens = b.tok.Count(it.Prompt)
		if timed {
			if i > 0 && *l.Timestamp < *lines[i-1].Timestamp {
				return nil, fmt.Errorf("path: %s: request %d: timestamp %v goes back from %v", w.Path, i+1, *l.Timestamp, *lines[i-1].Timestamp)
			}
			ms := (*l.Timestamp - *lines[0].Timestamp) / w.TimeScale
			it.Offset = time.Duration(ms * float64(time.Millisecond))
			it.Timed = true
		}
		items[i] = it
	}
	return items, nil
}

// blockPrompt renders input_length tokens: full blocks for each hash id
// (cached in blocks so equal ids give equal text), a shorter last block when
// input_length ends inside it, and line-specific text past the last id.
func blockPrompt(tok Tokenizer, l TraceLine, size int, blocks map[int]string, src Source, i int) string {
	left := l.InputLength
	parts := []string{}
	for _, id := range l.HashIDs {
		if left == 0 {
			break
		}
		if left < size {
			parts = append(parts, tok.Generate(src("partial-block", id), left))
			left = 0
			break
		}
		b, ok := blocks[id]
		if !ok {
			b = tok.Generate(src("block", id), size)
			blocks[id] = b
		}
		parts = append(parts, b)
		left -= size
	}
	if left > 0 {
		parts = append(parts, tok.Generate(src("trace", i), left))
	}
	return join(parts...)
}
