package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Faults is the fault injection state of a server. It is set in Options and
// replaced at run time with SetFaults or POST /admin/faults.
type Faults struct {
	// ErrorRates answers that fraction of generation requests with the HTTP
	// status (400–599) instead of serving them. Fractions sum to at most 1.
	ErrorRates map[int]float64
	// AddedLatency delays every generation request before it reaches the engine.
	AddedLatency time.Duration
	// Stall freezes responses: a stream stops after StallAfterTokens content
	// chunks, a non-streaming answer is withheld, for StallFor (0: until the
	// client or the server gives up).
	Stall            bool
	StallAfterTokens int
	StallFor         time.Duration
	// RefuseConnections resets every new TCP connection.
	RefuseConnections bool
	// Crash stops the server at once: connections are cut and Serve
	// returns ErrCrashed.
	Crash bool
}

// clone is a copy of f that shares no map with it: handlers read the
// server's faults on every request while a caller may still hold f.
func (f Faults) clone() *Faults {
	f.ErrorRates = maps.Clone(f.ErrorRates)
	return &f
}

// faultsJSON is the wire form of Faults (durations in milliseconds).
type faultsJSON struct {
	ErrorRates        map[string]float64 `json:"error_rates,omitempty"`
	AddedLatencyMs    float64            `json:"added_latency_ms,omitempty"`
	Stall             bool               `json:"stall,omitempty"`
	StallAfterTokens  int                `json:"stall_after_tokens,omitempty"`
	StallForMs        float64            `json:"stall_for_ms,omitempty"`
	RefuseConnections bool               `json:"refuse_connections,omitempty"`
	Crash             bool               `json:"crash,omitempty"`
}

// MarshalJSON renders f in its wire form.
func (f Faults) MarshalJSON() ([]byte, error) {
	w := faultsJSON{
		AddedLatencyMs: ms(f.AddedLatency), Stall: f.Stall, StallAfterTokens: f.StallAfterTokens,
		StallForMs: ms(f.StallFor), RefuseConnections: f.RefuseConnections, Crash: f.Crash,
	}
	if len(f.ErrorRates) > 0 {
		w.ErrorRates = map[string]float64{}
		for code, r := range f.ErrorRates {
			w.ErrorRates[strconv.Itoa(code)] = r
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the wire form strictly: unknown fields are errors.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var w faultsJSON
	if err := decodeStrict(b, &w); err != nil {
		return err
	}
	out := Faults{
		AddedLatency: fromMs(w.AddedLatencyMs), Stall: w.Stall, StallAfterTokens: w.StallAfterTokens,
		StallFor: fromMs(w.StallForMs), RefuseConnections: w.RefuseConnections, Crash: w.Crash,
	}
	for k, r := range w.ErrorRates {
		code, err := strconv.Atoi(k)
		if err != nil {
			return field.Errorf("error_rates", "key %q is not an HTTP status", k)
		}
		if out.ErrorRates == nil {
			out.ErrorRates = map[int]float64{}
		}
		out.ErrorRates[code] = r
	}
	*f = out
	return nil
}

// Validate reports the first unusable field.
func (f Faults) Validate() error {
	total := 0.0
	for _, code := range slices.Sorted(maps.Keys(f.ErrorRates)) {
		r := f.ErrorRates[code]
		if code < 400 || code > 599 {
			return field.Errorf("error_rates", "status %d is not an HTTP error status (400-599)", code)
		}
		if r < 0 || r > 1 || r != r {
			return field.Errorf(fmt.Sprintf("error_rates[%d]", code), "rate must be in [0, 1], got %v", r)
		}
		total += r
	}
	if total > 1+1e-9 {
		return field.Errorf("error_rates", "rates sum to %v, more than 1", total)
	}
	if f.AddedLatency < 0 {
		return field.Errorf("added_latency", "must be >= 0, got %v", f.AddedLatency)
	}
	if f.StallAfterTokens < 0 {
		return field.Errorf("stall_after_tokens", "must be >= 0, got %d", f.StallAfterTokens)
	}
	if f.StallFor < 0 {
		return field.Errorf("stall_for", "must be >= 0, got %v", f.StallFor)
	}
	return nil
}

// injectedStatus draws whether this request fails and with which status.
func (f *Faults) injectedStatus() int {
	if len(f.ErrorRates) == 0 {
		return 0
	}
	u := rand.Float64()
	for _, code := range slices.Sorted(maps.Keys(f.ErrorRates)) {
		if u < f.ErrorRates[code] {
			return code
		}
		u -= f.ErrorRates[code]
	}
	return 0
}

func errorTypeFor(status int) string {
	switch {
	case status == http.StatusNotFound:
		return typeNotFound
	case status == http.StatusTooManyRequests:
		return "RateLimitError"
	case status == http.StatusServiceUnavailable:
		return typeUnavailable
	case status >= 500:
		return typeInternal
	}
	return typeBadRequest
}

func ms(d time.Duration) float64     { return float64(d) / float64(time.Millisecond) }
func fromMs(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
