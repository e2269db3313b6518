package failure_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// TestSimLengthRefusalIsContextLengthExceeded sends a request longer than a
// real sim engine's max_model_len and classifies the error body it answers.
func TestSimLengthRefusalIsContextLengthExceeded(t *testing.T) {
	url := simtest.Start(t, sim.Options{Engine: engine.Config{MaxModelLen: 100}})
	body, _ := json.Marshal(map[string]any{"model": simtest.DefaultModel, "prompt": strings.Repeat("the ", 90), "max_tokens": 20})
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	b, ok := failure.ParseErrorBody(resp.StatusCode, raw)
	if !ok {
		t.Fatalf("not an OpenAI error body: %s", raw)
	}
	got := failure.Classify(failure.Observation{ErrorTypes: map[string]int{b.Type: 1}, ErrorBodies: []failure.ErrorBody{b}})
	f, ok := got.(failure.ContextLengthExceeded)
	if !ok || f.MaxModelLen != 100 || f.Requested != 110 || f.Status != 400 || f.Message != b.Message {
		t.Fatalf("classified %#v from %s, want ContextLengthExceeded(100, 110) with the engine's message", got, raw)
	}
}
