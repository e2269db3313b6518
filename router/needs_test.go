package router

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDescribeExtractsOnlyWhatThePolicyReads: round_robin gets an empty
// request (no text extraction, no hash key), cache_aware the model and
// text, consistent_hash only the key; every policy gets the same
// validation.
func TestDescribeExtractsOnlyWhatThePolicyReads(t *testing.T) {
	t.Parallel()
	const body = `{"model":"m","prompt":"hello there"}`
	for _, tc := range []struct {
		policy            string
		model, text, hash bool
	}{
		{"round_robin", false, false, false},
		{"least_loaded", false, false, false},
		{"cache_aware", true, true, false},
		{"consistent_hash", false, false, true},
	} {
		r, err := New(testConfig(tc.policy, "http://127.0.0.1:1"))
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
		pr, apiErr := r.describe(req, []byte(body), kindInference)
		if apiErr != nil {
			t.Fatalf("%s: %v", tc.policy, apiErr)
		}
		if (pr.Model == "m") != tc.model || (pr.Text == "hello there") != tc.text || (pr.HashKey != "") != tc.hash {
			t.Errorf("%s: described %+v", tc.policy, pr)
		}
		for _, bad := range []string{`{"prompt":`, `[1,2]`, `null`, `{} {}`, ``, `"x"`} {
			if _, apiErr := r.describe(req, []byte(bad), kindInference); apiErr == nil || apiErr.Type != ErrTypeInvalidRequest {
				t.Errorf("%s: body %q accepted (%v)", tc.policy, bad, apiErr)
			}
		}
	}
}
