package calibrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Request is one probe request as observed by the client: when it was sent
// and when each streamed token arrived, both from the probe's start, and
// the server's own count of its prompt (usage.prompt_tokens) and of the
// prompt tokens its prefix cache served.
type Request struct {
	Prompt       string          `json:"-"`
	MaxTokens    int             `json:"max_tokens"`
	Sent         time.Duration   `json:"sent"`
	Tokens       []time.Duration `json:"tokens"`
	PromptTokens int             `json:"prompt_tokens"`
	CachedTokens int             `json:"cached_tokens"`
}

// TTFT is the time from sending to the first token.
func (r *Request) TTFT() time.Duration { return r.Tokens[0] - r.Sent }

// TPOT is the mean gap between output tokens (0 with one token).
func (r *Request) TPOT() time.Duration {
	if len(r.Tokens) < 2 {
		return 0
	}
	return (r.Tokens[len(r.Tokens)-1] - r.Tokens[0]) / time.Duration(len(r.Tokens)-1)
}

// E2E is the time from sending to the last token.
func (r *Request) E2E() time.Duration { return r.Tokens[len(r.Tokens)-1] - r.Sent }

// streamChunk is the part of a completions stream chunk the probe reads.
type streamChunk struct {
	Choices []struct {
		Text string `json:"text"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// client sends probe requests to one server.
type client struct {
	http  *http.Client
	base  string
	model string
	start time.Time
}

// send streams one completion of exactly r.MaxTokens tokens (ignore_eos,
// vLLM's extension) and fills r's times and counts, calling onToken (if
// set) with each token's arrival. Each chunk with text
// is one token: vLLM streams one chunk per request per step.
func (c *client) send(ctx context.Context, r *Request, onToken func(time.Duration)) error {
	body, err := json.Marshal(map[string]any{"model": c.model, "prompt": r.Prompt, "max_tokens": r.MaxTokens,
		"ignore_eos": true, "temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	r.Sent = time.Since(c.start)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("POST %s/v1/completions: %s: %s", c.base, resp.Status, bytes.TrimSpace(msg))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		at := time.Since(c.start)
		var ch streamChunk
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			return fmt.Errorf("stream chunk %q: %w", line, err)
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Text != "" {
			r.Tokens = append(r.Tokens, at)
			if onToken != nil {
				onToken(at)
			}
		}
		if u := ch.Usage; u != nil {
			r.PromptTokens = u.PromptTokens
			if u.PromptTokensDetails != nil {
				r.CachedTokens = u.PromptTokensDetails.CachedTokens
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(r.Tokens) != r.MaxTokens || r.PromptTokens == 0 {
		return fmt.Errorf("stream gave %d token chunks of %d asked and prompt_tokens %d: the server must stream one chunk per token, honour ignore_eos and report usage (stream_options.include_usage)",
			len(r.Tokens), r.MaxTokens, r.PromptTokens)
	}
	return nil
}
