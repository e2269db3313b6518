package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// ExportRequest is one request of a stream as a trace records it.
type ExportRequest struct {
	// Prompt is the whole prompt text sent (on completions, the body's prompt).
	Prompt       string
	OutputTokens int
	// Offset is the intended send time from the start of the run.
	Offset  time.Duration
	Session string
}

// ExportOptions say how a trace is written.
type ExportOptions struct {
	// BlockSize is the tokens per hash_ids block (Mooncake's traces: 512).
	BlockSize int
	// Prompts writes each prompt's text too, so that re-importing gives
	// byte-identical requests; without it a replay regenerates texts of the
	// same lengths and block sharing.
	Prompts bool
}

// WriteMooncakeTrace writes reqs as a Mooncake-format trace: one JSON line
// per request with timestamp (ms), input_length, output_length, hash_ids
// and session_id. Hash ids are chained like vLLM's prefix-cache block hashes:
// a block's id names its tokens and every block before it, so two requests
// share id k exactly when they share the prompt up to the end of block k.
// The last block may be partial (len(hash_ids) = ⌈input_length/block_size⌉,
// as in Mooncake's traces).
func WriteMooncakeTrace(w io.Writer, reqs []ExportRequest, tok Tokenizer, opt ExportOptions) error {
	if opt.BlockSize <= 0 {
		return fmt.Errorf("block_size: must be > 0, got %d", opt.BlockSize)
	}
	encode, err := encoder(tok)
	if err != nil {
		return err
	}
	ids := map[string]int{}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i, q := range reqs {
		toks := encode(q.Prompt)
		ms := float64(q.Offset) / float64(time.Millisecond)
		l := TraceLine{Timestamp: &ms, InputLength: len(toks), OutputLength: q.OutputTokens, SessionID: q.Session}
		if opt.Prompts {
			l.Prompt = q.Prompt
		}
		parent := ""
		for start := 0; start < len(toks); start += opt.BlockSize {
			key := parent + "|" + blockKey(toks[start:min(start+opt.BlockSize, len(toks))])
			id, ok := ids[key]
			if !ok {
				id = len(ids)
				ids[key] = id
			}
			l.HashIDs = append(l.HashIDs, id)
			parent = strconv.Itoa(id)
		}
		if err := l.validate(); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return bw.Flush()
}

func blockKey(toks []int) string {
	var sb strings.Builder
	for _, t := range toks {
		sb.WriteString(strconv.Itoa(t))
		sb.WriteByte(',')
	}
	return sb.String()
}

// encoder returns the token ids of a text under tok.
func encoder(tok Tokenizer) (func(string) []int, error) {
	switch t := tok.(type) {
	case nil, Sim:
		return tokenizer.Tokenize, nil
	case *HF:
		return t.tok.Encode, nil
	}
	return nil, fmt.Errorf("tokenizer: %s cannot split prompts into blocks", tok.ID())
}
