package metrics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// RequestRecord is what the driver measured for one request. Times are
// milliseconds; offsets count from the start of the measured run.
type RequestRecord struct {
	Index     int    `json:"index"`
	SessionID string `json:"session_id,omitempty"`
	Turn      int    `json:"turn,omitempty"`
	// IntendedMs is when the arrival process (or, for a later turn, the end
	// of the previous turn plus think time) wanted the request sent; DueMs is
	// when it could be sent: later than IntendedMs only while the
	// max-concurrency cap was full. SendMs is when it was actually sent.
	IntendedMs float64 `json:"intended_ms"`
	DueMs      float64 `json:"due_ms"`
	SendMs     float64 `json:"send_ms"`
	// ScheduleDelayMs = SendMs − DueMs: the driver's own lateness.
	ScheduleDelayMs float64 `json:"schedule_delay_ms"`
	// Sent is false for a request that never left (a multi-turn turn after
	// a failed one, or a cancelled run); its timing fields are zero.
	Sent bool `json:"sent"`

	TTFTMs float64   `json:"ttft_ms"`
	ITLMs  []float64 `json:"itl_ms"`
	// BurstITLs counts the ITLs whose event was already waiting in the
	// client's buffers when the event before it was read: the client was
	// behind, so those ITLs measure the client (client lag).
	BurstITLs int `json:"burst_itls,omitempty"`
	// TPOTMs is (E2EL − TTFT)/(output tokens − 1), 0 with ≤ 1 output token.
	TPOTMs float64 `json:"tpot_ms"`
	E2ELMs float64 `json:"e2el_ms"`

	// InputTokens is the client-side prompt length (as vllm's prompt_len);
	// PromptTokens and CachedTokens are what the server's usage reported.
	InputTokens  int  `json:"input_tokens"`
	OutputTokens int  `json:"output_tokens"`
	PromptTokens *int `json:"prompt_tokens,omitempty"`
	CachedTokens *int `json:"cached_tokens,omitempty"`

	Success   bool   `json:"success"`
	Status    int    `json:"status"`
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
	// ErrorBody is the JSON body of an HTTP error answer with a typed
	// error (up to 4 KiB): a router's pool_exhausted or pd_connector_timeout
	// details (retries, pool size, leg, timeout, request id) live there.
	ErrorBody json.RawMessage `json:"error_body,omitempty"`
	// GeneratedText is kept only when the run asks for it.
	GeneratedText string `json:"generated_text,omitempty"`
}

// WriteJSONL writes one record per line.
func WriteJSONL(w io.Writer, recs []RequestRecord) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("encoding request %d: %w", recs[i].Index, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing requests: %w", err)
	}
	return nil
}

// Error types of requests the run stopped before or during; Summarize
// counts them apart from failures.
const (
	NotSent    = "not_sent"
	Incomplete = "incomplete"
)
