package failure

import (
	"fmt"
	"regexp"
	"strconv"
)

// KindContextLengthExceeded names ContextLengthExceeded: the engine refused
// requests longer than its context (max_model_len).
const KindContextLengthExceeded Kind = "ContextLengthExceeded"

// ContextLengthExceeded is a length refusal: prompt plus max_tokens did
// not fit the engine's max_model_len. Message is the engine's own words.
type ContextLengthExceeded struct {
	// Count is the number of requests refused for length.
	Count int `json:"count"`
	// MaxModelLen is the engine's limit and Requested the sample request's
	// tokens (prompt plus max_tokens, or the prompt alone when the engine
	// only said that), both 0 when the message did not say.
	MaxModelLen int    `json:"max_model_len,omitempty"`
	Requested   int    `json:"requested,omitempty"`
	Status      int    `json:"status,omitempty"`
	Message     string `json:"message"`
}

// Kind is KindContextLengthExceeded.
func (ContextLengthExceeded) Kind() Kind { return KindContextLengthExceeded }

func (f ContextLengthExceeded) Error() string {
	return fmt.Sprintf("%d requests longer than the engine's context: %s", f.Count, f.Message)
}

// contextLengthWordings are the length refusals of vLLM's OpenAI server
// (V0 and V1) and of the sim, which uses the first. Each captures the limit
// and the requested tokens, by name.
var contextLengthWordings = []*regexp.Regexp{
	// "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8900 in the messages, 100 in the completion). ..."
	regexp.MustCompile(`maximum context length is (?P<max>\d+) tokens\. However, you requested (?P<req>\d+) tokens`),
	// V1: "This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens. ..."
	regexp.MustCompile(`maximum context length is (?P<max>\d+) tokens\. However, your request has (?P<req>\d+) input tokens`),
	// V1: "'max_tokens' or 'max_completion_tokens' is too large: 500. This model's maximum context length is 8192 tokens and your request has 7800 input tokens (500 > 8192 - 7800)."
	regexp.MustCompile(`is too large: (?P<out>\d+)\. This model's maximum context length is (?P<max>\d+) tokens and your request has (?P<in>\d+) input tokens`),
	// V1 engine: "The decoder prompt (length 9000) is longer than the maximum model length of 8192. ..."
	regexp.MustCompile(`prompt \(length (?P<req>\d+)\) is longer than the maximum model length of (?P<max>\d+)`),
}

// ParseContextLength recognises an engine's length refusal. ok is false for
// any other message.
func ParseContextLength(status int, message string) (ContextLengthExceeded, bool) {
	for _, re := range contextLengthWordings {
		m := re.FindStringSubmatch(message)
		if m == nil {
			continue
		}
		f := ContextLengthExceeded{Count: 1, Status: status, Message: message}
		val := map[string]int{}
		for i, name := range re.SubexpNames() {
			if name != "" {
				val[name], _ = strconv.Atoi(m[i])
			}
		}
		f.MaxModelLen, f.Requested = val["max"], val["req"]
		if f.Requested == 0 {
			f.Requested = val["in"] + val["out"]
		}
		return f, true
	}
	return ContextLengthExceeded{}, false
}

// contextLengthRule: length refusals are the workload asking for more than
// the engine holds, whatever the load; they come before the saturation
// rules. The count is the driver's (Observation.ContextLengthExceeded) or,
// when it did not count, the sample bodies that say so.
func contextLengthRule(o *Observation) Failure {
	var sample *ContextLengthExceeded
	matched := 0
	for _, b := range o.ErrorBodies {
		if f, ok := ParseContextLength(b.Status, b.Message); ok {
			if sample == nil {
				sample = &f
			}
			matched++
		}
	}
	if sample == nil {
		if o.ContextLengthExceeded == 0 {
			return nil
		}
		return ContextLengthExceeded{Count: o.ContextLengthExceeded, Message: "the engine refused requests for length (no sample message)"}
	}
	sample.Count = max(o.ContextLengthExceeded, matched)
	return *sample
}
