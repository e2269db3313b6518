package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
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
	ti, err := b.traceItems()
	if err != nil {
		return nil, err
	}
	items := make([]Item, ti.Len())
	for i := range items {
		items[i] = ti.At(i)
	}
	return items, nil
}

// traceItems are a trace's items built on demand: the file's lines (token
// counts and hash ids, no text) stay in memory, each prompt's text is
// rendered when its item is asked for, so a long trace's prompts never
// are all in memory at once.
type traceItems struct {
	b        builder
	lines    []TraceLine
	sessions []int // per line: the index of its session's first line
	timed    bool
	// blocks caches recent blocks' text (blockcache.go).
	mu     sync.Mutex
	blocks blockCache
}

// block is one hash id's text and, once a token-path request asked for
// them, its ids under the sim tokenizer as the span every prompt holding
// the block shares (generator.shared: keyed by the block's source), two
// bytes an id: a 512-token block's ids take 1 KB. A blind request caches
// the key alone (text "", span {Key, Blind}).
type block struct {
	text string
	span tokenizer.Span
}

// has reports whether b holds what g draws: its key (blind), its ids
// (which come with its text), or its text.
func (b block) has(g generator) bool {
	switch {
	case g.ids && g.blind:
		return b.span.Key != 0
	case g.ids:
		return b.span.IDs != nil
	}
	return b.text != ""
}

// maxCachedBlocks bounds traceItems' block cache: about 20 MB of text and
// 8 MB of ids at 512-token blocks.
const maxCachedBlocks = 8192

func (b builder) traceItems() (*traceItems, error) {
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
	t := &traceItems{b: b, lines: lines, sessions: make([]int, len(lines)), timed: !w.IgnoreTimestamps}
	first := map[string]int{}
	for i, l := range lines {
		t.timed = t.timed && l.Timestamp != nil
		t.sessions[i] = i
		if key := sessionKey(l, w.SessionPrefixBlocks); key != "" {
			if f, ok := first[key]; ok {
				t.sessions[i] = f
			} else {
				first[key] = i
			}
		}
		if l.Prompt != "" && l.InputLength > 0 {
			if n := b.tok.Count(l.Prompt); n != l.InputLength {
				return nil, field.Errorf("path", "%s: line %d: input_length: %d, but the prompt has %d tokens under %s", w.Path, l.Line, l.InputLength, n, b.tok.ID())
			}
		}
	}
	return t, nil
}

func (t *traceItems) Len() int { return len(t.lines) }

// Starts is every item: a trace's requests each arrive on their own.
func (t *traceItems) Starts() int { return len(t.lines) }

// At renders item i.
func (t *traceItems) At(i int) Item {
	it, _, _ := t.render(i, generator{tok: t.b.tok})
	return it
}

// AtTokens is At with the prompt's ids (TokenItems).
func (t *traceItems) AtTokens(i int) (Item, []tokenizer.Span) {
	it, spans, parts := t.AtParts(i, false)
	if parts != nil {
		it.Prompt = join(parts...)
	}
	return it, spans
}

// AtParts is AtTokens with a generated prompt as its parts (TokenItems).
func (t *traceItems) AtParts(i int, blind bool) (Item, []tokenizer.Span, []string) {
	if _, sim := t.b.tok.(Sim); !sim {
		return t.At(i), nil, nil
	}
	return t.render(i, generator{tok: t.b.tok, ids: true, blind: blind})
}

// render renders item i with g, and with g.ids its prompt's sim-tokenizer
// ids as spans and, when generated, its prompt as parts (the item's Prompt
// then "").
func (t *traceItems) render(i int, g generator) (Item, []tokenizer.Span, []string) {
	w, l := t.b.w, t.lines[i]
	it := single(i)
	it.Session = t.sessions[i]
	it.OutputTokens, it.Line = l.OutputLength, l.Line
	var spans []tokenizer.Span
	var parts []string
	if l.Prompt != "" {
		it.Prompt = l.Prompt
		it.InputTokens = t.b.tok.Count(it.Prompt)
		if g.ids {
			spans = []tokenizer.Span{{IDs: compact(tokenizer.Tokenize(l.Prompt))}}
		}
	} else {
		t.mu.Lock()
		parts, spans = g.blockPrompt(l, w.BlockSize, &t.blocks, t.b.src, i, w.UniquePrefixes)
		t.mu.Unlock()
		if !g.ids {
			it.Prompt, parts = join(parts...), nil
		}
		if _, sim := t.b.tok.(Sim); sim {
			// The sim tokenizer generates each part's count exactly and a
			// space joins words without a token of its own, so the prompt
			// has input_length tokens: counting 12k of them again cost a
			// tenth of a virtual run (TestTracePromptCountIsInputLength).
			it.InputTokens = l.InputLength
		} else {
			it.InputTokens = t.b.tok.Count(it.Prompt)
		}
	}
	if t.timed {
		ms := (*l.Timestamp - *t.lines[0].Timestamp) / w.TimeScale
		it.Offset = time.Duration(math.Round(ms * float64(time.Millisecond)))
		it.Timed = true
	}
	return it, spans, parts
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
// With unique (unique_prefixes) the whole prompt is line-specific text of
// input_length tokens: no block is shared with another line. The prompt
// comes as its parts (join) and, with g.ids, as its spans: a full block's
// is the cached block's own (keyed, shared by every line that holds it,
// not copied; with g.blind only its key, the block not drawn), the rest
// are the line's own (Key 0: a partial block or a tail is drawn for its
// line alone).
func (g generator) blockPrompt(l TraceLine, size int, blocks *blockCache, src Source, i int, unique bool) ([]string, []tokenizer.Span) {
	if unique {
		text, ids := g.generate(src("unique-trace", i), l.InputLength)
		return []string{text}, g.appendSpan(g.spans(1), tokenizer.Span{IDs: ids})
	}
	left := l.InputLength
	parts := make([]string, 0, min(len(l.HashIDs), l.InputLength/max(size, 1)+1)+1)
	spans := g.spans(cap(parts))
	for _, id := range l.HashIDs {
		if left == 0 {
			break
		}
		if left < size {
			text, ids := g.generate(src("partial-block", id), left)
			parts, spans = append(parts, text), g.appendSpan(spans, tokenizer.Span{IDs: ids})
			left = 0
			break
		}
		b, ok := blocks.get(id)
		if !ok || !b.has(g) {
			b.text, b.span = g.shared(src("block", id), size)
			blocks.put(id, b)
		}
		if g.blind {
			// Blind whatever the cache holds: every span of a key comes
			// one way in a run.
			parts, spans = append(parts, ""), append(spans, tokenizer.Span{Key: b.span.Key, Blind: size})
		} else {
			parts, spans = append(parts, b.text), g.appendSpan(spans, b.span)
		}
		left -= size
	}
	if left > 0 {
		text, ids := g.generate(src("trace", i), left)
		parts, spans = append(parts, text), g.appendSpan(spans, tokenizer.Span{IDs: ids})
	}
	return parts, spans
}

// spans is room for a prompt's n spans with g.ids (non-nil: the prompt
// was drawn), else nil.
func (g generator) spans(n int) []tokenizer.Span {
	if !g.ids {
		return nil
	}
	return make([]tokenizer.Span, 0, n)
}

// compact is ids as uint16 (nil for none).
func compact(ids []int) []uint16 {
	if ids == nil {
		return nil
	}
	out := make([]uint16, len(ids))
	for i, x := range ids {
		out[i] = uint16(x)
	}
	return out
}
