package workload

import (
	_ "embed" // the sonnets
	"math"
	"os"
	"strings"

	"github.com/autoinfer/autoinfer/trials/field"
)

// sonnets is Shakespeare's sonnets 1–37 (public domain), the text vllm
// bench serve's sonnet dataset ships.
//
//go:embed sonnet.txt
var sonnets string

// sonnetBase is the instruction every sonnet prompt starts with.
const sonnetBase = "Pick as many lines as you can from these poem lines:\n"

// sonnet follows vllm bench serve's sonnet dataset: the base instruction,
// then the first lines of the poem as a prefix every prompt shares (about
// prefix_len tokens), then lines drawn with replacement until about
// input_len tokens; a prompt longer than input_len is drawn again. Line
// counts come from the mean tokens per line. Unlike vllm no chat template
// is applied (autoinfer has none), so the base is the bare instruction.
func (b builder) sonnet() ([]Item, error) {
	if b.n == 0 {
		return nil, field.Errorf("num_prompts", "kind sonnet needs the number of requests (> 0)")
	}
	text := sonnets
	if b.w.Path != "" {
		data, err := os.ReadFile(b.w.Path)
		if err != nil {
			return nil, field.Errorf("path", "%v", err)
		}
		text = string(data)
	}
	lines := strings.SplitAfter(strings.TrimRight(text, "\n")+"\n", "\n")
	lines = lines[:len(lines)-1] // SplitAfter leaves "" after the last newline
	if len(lines) == 0 {
		return nil, field.Errorf("path", "%s: no lines", b.w.Path)
	}
	base := b.tok.Count(sonnetBase)
	if b.w.InputLen <= base {
		return nil, field.Errorf("input_len", "must be > the instruction's %d tokens, got %d", base, b.w.InputLen)
	}
	total := 0
	for _, l := range lines {
		total += b.tok.Count(l)
	}
	avg := float64(total) / float64(len(lines))
	numPrefix := max(int(math.RoundToEven(float64(b.w.PrefixLen-base)/avg)), 0)
	numInput := int(math.RoundToEven(float64(b.w.InputLen-base) / avg))
	numPrefix = min(numPrefix, len(lines))
	prefix := sonnetBase + strings.Join(lines[:numPrefix], "")
	r := b.src("sonnet", 0)
	items := make([]Item, 0, b.n)
	for tries := 0; len(items) < b.n; tries++ {
		if tries > 100*b.n {
			return nil, field.Errorf("input_len", "%d tokens is too short for prompts of %d lines (%.1f tokens per line)", b.w.InputLen, numInput, avg)
		}
		var sb strings.Builder
		sb.WriteString(prefix)
		for range max(numInput-numPrefix, 0) {
			sb.WriteString(lines[r.IntN(len(lines))])
		}
		prompt := sb.String()
		in := b.tok.Count(prompt)
		if in > b.w.InputLen {
			continue
		}
		it := single(len(items))
		it.Prompt, it.InputTokens, it.OutputTokens = prompt, in, b.w.OutputLen
		items = append(items, it)
	}
	return items, nil
}
