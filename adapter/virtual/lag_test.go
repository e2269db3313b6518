package virtual_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/target/sim"
)

// TestEngineLagExactTimes: with the engine's steps L = 0.4 ms late and a
// step planned on waking from idle W = 0.1 ms late, on one idle engine
// (fast profile, no prefix cache):
//   - A (100 prompt tokens, 2 output) arrives at 0; the sleeping loop
//     plans A's prefill at once, which completes (A's first token) at
//     s1 + W;
//   - B (50 prompt, 1 output) arrives after step 1's planned end but
//     before the late loop plans step 2, so it joins step 2 (its prefill
//     with A's decode), which is scheduled from step 1's planned end (the
//     catch-up rule) and emits at s1 + s2 + L: A's last token and B's
//     only one;
//   - the engine then idles; C (30 prompt, 1 output) arrives 1 ms later,
//     inside the catch-up window of step 2's planned end, yet starts fresh
//     at its arrival (an idle loop restarts from its wake-up): its TTFT is
//     s3 + W.
//
// Without the lag B would miss step 2, which is the check that it joined;
// with W and L swapped A's and C's first tokens move.
func TestEngineLagExactTimes(t *testing.T) {
	const lag, wake = 400 * time.Microsecond, 100 * time.Microsecond
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	s1 := prof.StepTime(100, 0, 0)
	end1 := s1
	sendB := end1 + wake/2
	s2 := prof.StepTime(50, 1, 101)
	end2 := end1 + s2
	sendC := end2 + lag + time.Millisecond
	s3 := prof.StepTime(30, 0, 0)
	msf := func(d time.Duration) float64 { return float64(d) / 1e6 }
	trace := fmt.Sprintf(`{"timestamp": 0, "input_length": 100, "output_length": 2}
{"timestamp": %.6f, "input_length": 50, "output_length": 1}
{"timestamp": %.6f, "input_length": 30, "output_length": 1}
`, msf(sendB), msf(sendC))
	recs := runTraceLag(t, trace, 0, 0, 0, lag, wake)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	a, b, c := recs[0], recs[1], recs[2]
	if *a.PromptTokens != 100 || *b.PromptTokens != 50 || *c.PromptTokens != 30 {
		t.Fatalf("prompt tokens %d, %d, %d: want 100, 50, 30", *a.PromptTokens, *b.PromptTokens, *c.PromptTokens)
	}
	within := func(got, want float64) bool { return got-want < 1e-6 && want-got < 1e-6 }
	if want := msf(s1 + wake); !within(a.TTFTMs, want) {
		t.Errorf("A: TTFT %.6f ms, want %.6f (prefill planned at the arrival, completed the wake-up lateness late)", a.TTFTMs, want)
	}
	if want := msf(end2 + lag); !within(a.E2ELMs, want) {
		t.Errorf("A: E2E %.6f ms, want %.6f (step 2 from step 1's planned end, emitted lag late)", a.E2ELMs, want)
	}
	if want := msf(end2+lag) - b.SendMs; !within(b.TTFTMs, want) {
		t.Errorf("B: sent at %.6f ms, TTFT %.6f ms, want %.6f (joined the late-planned step 2)", b.SendMs, b.TTFTMs, want)
	}
	if want := msf(s3 + wake); !within(c.TTFTMs, want) {
		t.Errorf("C: TTFT %.6f ms, want %.6f (an idle engine starts at the arrival, its step the wake-up lateness late)", c.TTFTMs, want)
	}

	// Without the lag, B arrives after step 2 was planned (A's decode
	// alone) and its prefill waits for step 3.
	noLag := runTraceLag(t, fmt.Sprintf(`{"timestamp": 0, "input_length": 100, "output_length": 2}
{"timestamp": %.6f, "input_length": 50, "output_length": 1}
`, msf(sendB)), 0, 0, 0, 0, 0)
	decodeA := prof.StepTime(0, 1, 101)
	if want := msf(s1+decodeA+prof.StepTime(50, 0, 0)) - noLag[1].SendMs; !within(noLag[1].TTFTMs, want) {
		t.Errorf("no lag: B's TTFT %.6f ms, want %.6f (after A's lone decode step)", noLag[1].TTFTMs, want)
	}
}

// TestEngineLagDeterministic: a lagged run is a pure function of its
// inputs (the same seed gives byte-identical records), and the lag moves
// the records.
func TestEngineLagDeterministic(t *testing.T) {
	run := func(lag, wake time.Duration) []byte {
		return cacheAwareRecords(t, func(d *virtual.Deployment, _ *driver.Config) error {
			return d.Fleet().SetLag(lag, wake)
		})
	}
	const lag, wake = 300 * time.Microsecond, 80 * time.Microsecond
	lagged, again, none := run(lag, wake), run(lag, wake), run(0, 0)
	if !bytes.Equal(lagged, again) {
		t.Error("the same lag, wake-up and seed twice gave different records")
	}
	if bytes.Equal(lagged, none) {
		t.Error("a 0.3 ms engine lag and 0.08 ms wake-up lateness left the records unchanged")
	}
	if bytes.Equal(lagged, run(lag, lag)) {
		t.Error("a woken step 0.08 ms late gave the same records as one 0.3 ms late")
	}
}

// TestSetLagRefused: a negative lag or wake-up, or one set after the fleet
// started, is an error.
func TestSetLagRefused(t *testing.T) {
	d, err := virtual.New(workers(t, 1, sim.RoleCollocated), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Fleet().SetLag(-time.Microsecond, 0); err == nil {
		t.Error("a negative lag was accepted")
	}
	if err := d.Fleet().SetLag(0, -time.Microsecond); err == nil {
		t.Error("a negative wake-up was accepted")
	}
	body := []byte(`{"model":"sim-model","prompt":"hello there","max_tokens":2}`)
	if err := d.Send(0, driver.CompletionsEndpoint, nil, body, 0); err != nil {
		t.Fatal(err)
	}
	d.Plan()
	if err := d.Fleet().SetLag(time.Millisecond, 0); err == nil {
		t.Error("a lag set after a step started was accepted")
	}
}

// TestWokenStepLateBeyondTheNextStep: when a woken step completes so late
// (W = 10 ms) that the steps scheduled after it by the catch-up rule have
// planned ends already past, the live loop does not wait for them: it
// completes each at once. A (100 prompt tokens, 3 output) gets all three
// tokens at s1 + W, and the next steps run from there. Before, the fleet
// queued those steps' ends in the past (their planned end plus the lag)
// and the driver's clock was told to go back: "time went back", which
// failed `sim overhead` whenever a busy host made the measured wake-up
// lateness longer than a decode step.
func TestWokenStepLateBeyondTheNextStep(t *testing.T) {
	const lag, wake = 400 * time.Microsecond, 10 * time.Millisecond
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	s1, d2, d3 := prof.StepTime(100, 0, 0), prof.StepTime(0, 1, 101), prof.StepTime(0, 1, 102)
	if d2+d3 >= wake {
		t.Fatalf("decode steps %v and %v: the test needs them shorter than the wake-up lateness %v together", d2, d3, wake)
	}
	recs := runTraceLag(t, `{"timestamp": 0, "input_length": 100, "output_length": 3}
`, 0, 0, 0, lag, wake)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	a := recs[0]
	msf := func(d time.Duration) float64 { return float64(d) / 1e6 }
	within := func(got, want float64) bool { return got-want < 1e-6 && want-got < 1e-6 }
	if want := msf(s1 + wake); !within(a.TTFTMs, want) || !within(a.E2ELMs, want) {
		t.Errorf("A: TTFT %.6f ms, E2E %.6f ms: want both %.6f (the decode steps' planned ends had passed, so they completed at once)",
			a.TTFTMs, a.E2ELMs, want)
	}
}
