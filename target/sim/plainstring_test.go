package sim

import (
	"encoding/json"
	"testing"
)

// TestPlainStringAgreesWithUnmarshal: the prompt fast path gives what
// encoding/json gives whenever it accepts, and declines escapes, non-ASCII
// and non-strings (which take the decoding path).
func TestPlainStringAgreesWithUnmarshal(t *testing.T) {
	for _, c := range []struct {
		raw string
		ok  bool
	}{
		{`"hello world"`, true}, {`""`, true}, {`"a, b. c!"`, true},
		{`"tab\there"`, false}, {`"quote\"d"`, false}, {`"caf\u00e9"`, false}, {"\"café\"", false},
		{`["x"]`, false}, {`42`, false}, {`null`, false},
	} {
		got, ok := plainString(json.RawMessage(c.raw))
		if ok != c.ok {
			t.Errorf("plainString(%s) ok = %v, want %v", c.raw, ok, c.ok)
			continue
		}
		var want string
		if err := json.Unmarshal([]byte(c.raw), &want); ok && (err != nil || got != want) {
			t.Errorf("plainString(%s) = %q, json gives %q (%v)", c.raw, got, want, err)
		}
	}
}
