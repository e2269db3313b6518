package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Trace formats (the trace kind's format knob).
const (
	FormatAuto     = "auto"     // detected from the file's first record
	FormatMooncake = "mooncake" // JSON Lines, Mooncake's keys (autoinfer's own traces too)
	FormatAzure    = "azure"    // Azure LLM inference CSV: TIMESTAMP,ContextTokens,GeneratedTokens
)

// TraceLine is one request of a trace file. The names follow Mooncake's
// public traces (JSON Lines), so those replay as they are; the Azure CSV's
// rows are read into the same shape.
type TraceLine struct {
	// Timestamp is the arrival time in milliseconds (any origin).
	Timestamp *float64 `json:"timestamp,omitempty"`
	// Prompt is sent verbatim; otherwise InputLength tokens are generated.
	// An exported trace carries both (input_length then counts the prompt).
	Prompt      string `json:"prompt,omitempty"`
	InputLength int    `json:"input_length,omitempty"`
	// OutputLength is max_tokens.
	OutputLength int `json:"output_length"`
	// SessionID groups requests under one session header.
	SessionID string `json:"session_id,omitempty"`
	// HashIDs name the prompt's blocks of block_size tokens: equal ids give
	// equal text, so prefix sharing in the trace is reproduced.
	HashIDs []int `json:"hash_ids,omitempty"`

	// Line is the line of the file the request was read from (1-based).
	Line int `json:"-"`
}

// trace replays a trace file: its requests in order, sliced by the time
// window and num_prompts, timestamps divided by time_scale.
func (b builder) trace() ([]Item, error) {
	w := b.w
	lines, err := ReadTraceFile(w.Path, w.Format)
	if err != nil {
		return nil, field.Errorf("path", "%v", err)
	}
	if lines, err = sliceTrace(w, lines); err != nil {
		return nil, err
	}
	if b.n > len(lines) {
		return nil, field.Errorf("num_prompts", "%d requested but the trace has %d requests%s", b.n, len(lines), windowNote(w))
	}
	if b.n > 0 {
		lines = lines[:b.n]
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
		if key := sessionKey(l, w.SessionPrefixBlocks); key != "" {
			if first, ok := sessions[key]; ok {
				it.Session = first
			} else {
				sessions[key] = i
			}
		}
		it.OutputTokens, it.Line = l.OutputLength, l.Line
		if l.Prompt != "" {
			it.Prompt = l.Prompt
		} else {
			it.Prompt = blockPrompt(b.tok, l, w.BlockSize, blocks, b.src, i)
		}
		it.InputTokens = b.tok.Count(it.Prompt)
		if l.Prompt != "" && l.InputLength > 0 && l.InputLength != it.InputTokens {
			return nil, field.Errorf("path", "%s: line %d: input_length: %d, but the prompt has %d tokens under %s", w.Path, l.Line, l.InputLength, it.InputTokens, b.tok.ID())
		}
		if timed {
			ms := (*l.Timestamp - *lines[0].Timestamp) / w.TimeScale
			it.Offset = time.Duration(math.Round(ms * float64(time.Millisecond)))
			it.Timed = true
		}
		items[i] = it
	}
	return items, nil
}

// sessionKey is the session a line belongs to: its session_id, else (with
// session_prefix_blocks N) its first N hash ids, else none ("").
func sessionKey(l TraceLine, prefixBlocks int) string {
	if l.SessionID != "" {
		return "id:" + l.SessionID
	}
	if prefixBlocks == 0 || len(l.HashIDs) < prefixBlocks {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("blocks:")
	for _, id := range l.HashIDs[:prefixBlocks] {
		fmt.Fprintf(&sb, "%d,", id)
	}
	return sb.String()
}

// sliceTrace keeps the lines whose time from the trace's first request lies
// in [window_start_s, window_end_s).
func sliceTrace(w Workload, lines []TraceLine) ([]TraceLine, error) {
	if w.WindowStartS == 0 && w.WindowEndS == 0 {
		return lines, nil
	}
	var out []TraceLine
	for _, l := range lines {
		if l.Timestamp == nil {
			return nil, field.Errorf("window_start_s", "line %d of the trace has no timestamp to slice by", l.Line)
		}
		s := (*l.Timestamp - *lines[0].Timestamp) / 1000
		if s >= w.WindowStartS && (w.WindowEndS == 0 || s < w.WindowEndS) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, field.Errorf("window_start_s", "no request of the trace lies in the window%s", windowNote(w))
	}
	return out, nil
}

func windowNote(w Workload) string {
	if w.WindowStartS == 0 && w.WindowEndS == 0 {
		return ""
	}
	end := "the end"
	if w.WindowEndS > 0 {
		end = fmt.Sprintf("%gs", w.WindowEndS)
	}
	return fmt.Sprintf(" in the window [%gs, %s)", w.WindowStartS, end)
}

func (l TraceLine) validate() error {
	switch {
	case l.OutputLength <= 0:
		return fmt.Errorf("output_length: must be > 0, got %d", l.OutputLength)
	case l.Prompt == "" && l.InputLength <= 0:
		return fmt.Errorf("input_length: must be > 0 when there is no prompt, got %d", l.InputLength)
	case l.Prompt != "" && l.InputLength < 0:
		return fmt.Errorf("input_length: must be > 0, got %d", l.InputLength)
	case l.Prompt != "" && l.InputLength == 0 && len(l.HashIDs) > 0:
		return errors.New("prompt: hash_ids with a prompt need its input_length")
	case l.Timestamp != nil && !(*l.Timestamp >= 0) || l.Timestamp != nil && math.IsInf(*l.Timestamp, 0):
		return fmt.Errorf("timestamp: must be a finite number >= 0, got %v", *l.Timestamp)
	}
	return nil
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
