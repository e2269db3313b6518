package failure

import "testing"

func TestParseContextLengthReadsVLLMsWordings(t *testing.T) {
	for _, tc := range []struct {
		msg          string
		max, request int
		notARefusal  bool
	}{
		// vLLM V0 and the sim.
		{msg: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8900 in the messages, 100 in the completion). Please reduce the length of the messages or completion.", max: 8192, request: 9000},
		// vLLM V1: the prompt alone is too long.
		{msg: "This model's maximum context length is 1536 tokens. However, your request has 4176 input tokens. Please reduce the length of the input messages.", max: 1536, request: 4176},
		// vLLM V1: prompt + max_tokens too long.
		{msg: "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None", max: 4096, request: 10778},
		// vLLM V1 engine-level check.
		{msg: "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.", max: 8192, request: 9000},
		{msg: "max_tokens must be at least 1, got 0.", notARefusal: true},
		{msg: "The model `x` does not exist.", notARefusal: true},
	} {
		f, ok := ParseContextLength(400, tc.msg)
		if ok == tc.notARefusal {
			t.Errorf("%q: recognised %v, want %v", tc.msg, ok, !tc.notARefusal)
			continue
		}
		if ok && (f.MaxModelLen != tc.max || f.Requested != tc.request || f.Message != tc.msg || f.Status != 400) {
			t.Errorf("%q: %+v, want max %d requested %d with the engine's message", tc.msg, f, tc.max, tc.request)
		}
	}
}

func TestClassifyCountsLengthRefusalsBeforeUnknown(t *testing.T) {
	msg := "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8900 in the messages, 100 in the completion). Please reduce the length of the messages or completion."
	o := Observation{
		ErrorTypes:            map[string]int{"BadRequestError": 87},
		StatusCounts:          map[int]int{400: 87},
		ErrorBodies:           []ErrorBody{{Status: 400, Type: "BadRequestError", Message: msg}},
		ContextLengthExceeded: 87,
	}
	f, ok := Classify(o).(ContextLengthExceeded)
	if !ok || f.Count != 87 || f.MaxModelLen != 8192 || f.Message != msg {
		t.Fatalf("Classify = %#v, want ContextLengthExceeded ×87 carrying the engine's message", Classify(o))
	}
	// Without the driver's count, the sample bodies that say so count.
	o.ContextLengthExceeded = 0
	if f, ok := Classify(o).(ContextLengthExceeded); !ok || f.Count != 1 {
		t.Errorf("from the sample body alone: %#v", Classify(o))
	}
	// Another 400 stays Unknown.
	o.ErrorBodies[0].Message = "temperature must be non-negative"
	if got := Classify(o); got == nil || got.Kind() != KindUnknown {
		t.Errorf("another bad request: %v", got)
	}
}
