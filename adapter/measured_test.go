package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/trials"
)

// streamedSpec is a virtual trial whose records complete out of index
// order (poisson arrivals, random lengths, shared prefixes for
// precise_prefix's receipts), some of them cut short by max_seconds.
const streamedSpec = `
name: streamed
seed: 7
clock: virtual
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 2, engine: {model: sim-llama-3-8b,
  extra_args: {kv_events_config: '{"enable_kv_cache_events": true, "publisher": "zmq"}'}}}
router: {policy: precise_prefix}
workload: {kind: random, input_len: 256, prefix_len: 128, output_len: 64, range_ratio: 0.9, num_prompts: 300,
  max_seconds: %MAX%, arrival: {kind: poisson, request_rate: 120}}
warmup: {requests: 2}
`

// keptRun is the trial's run as the runner made it before it spooled its
// records: the whole result kept, the records converted at the end, each
// with the receipt of its request's last decision, and the decision record
// written from the kept records.
func keptRun(t *testing.T, r *Runner, tr trials.Trial) (reqs []ledger.Request, decisions []byte) {
	t.Helper()
	dep, err := virtual.FromTrial(tr)
	if err != nil {
		t.Fatal(err)
	}
	dep.RecordReceipts()
	var ds []virtual.Decision
	dep.RecordDecisions(func(d virtual.Decision) { ds = append(ds, d) })
	run := &trialRun{Runner: r, t: tr}
	res, err := driver.Simulate(context.Background(), run.driverConfig(virtual.BaseURL), dep)
	if err != nil {
		t.Fatal(err)
	}
	receipts := map[int]*router.Receipt{}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, d := range ds {
		if !d.Warmup && d.Receipt != nil {
			receipts[d.ID] = d.Receipt
		}
		line := DecisionLine{Trial: tr.Name, Decision: d}
		if !d.Warmup && d.ID >= 0 && d.ID < len(res.Requests) && res.Requests[d.ID].Index == d.ID {
			q := res.Requests[d.ID]
			line.Result = &DecisionResult{Success: q.Success, TTFTMs: q.TTFTMs, E2ELMs: q.E2ELMs, OutputTokens: q.OutputTokens, CachedTokens: q.CachedTokens}
		}
		if err := enc.Encode(line); err != nil {
			t.Fatal(err)
		}
	}
	reqs = requestsOf(res.Requests)
	for i := range reqs {
		if rc := receipts[reqs[i].Index]; rc != nil {
			b, err := json.Marshal(rc)
			if err != nil {
				t.Fatal(err)
			}
			reqs[i].Receipt = b
		}
	}
	return reqs, buf.Bytes()
}

// rowWithRecords reads row id and its request records.
func rowWithRecords(t *testing.T, led *ledger.Ledger, id int64) (ledger.Trial, []ledger.Request) {
	t.Helper()
	row, err := led.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := led.Requests(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return row, reqs
}

// Issue 30, item 2: a virtual trial's records, spooled as they complete
// and written from the spool, are in the ledger exactly as the run that
// kept them all would have written them (the kept run's records written
// through the same ledger), receipts included, with the same shed rate;
// its decision record, written as the run goes, is byte-identical to the
// one written from the kept records. A run cut short by max_seconds
// (records of requests not sent or in flight) too.
func TestVirtualTrialRecordsMatchTheKeptRun(t *testing.T) {
	for _, maxSeconds := range []string{"0", "1.2"} {
		t.Run("max_seconds="+maxSeconds, func(t *testing.T) {
			led, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer led.Close()
			var decisions bytes.Buffer
			r, err := New(Options{Ledger: led, WorkDir: t.TempDir(), ScheduleDelayLimit: noOverload,
				EngineLagRatioLimit: noEngineLagBound, Decisions: &decisions})
			if err != nil {
				t.Fatal(err)
			}
			tr := parseSpec(t, strings.Replace(streamedSpec, "%MAX%", maxSeconds, 1))[0]
			out := runOK(t, r, tr)
			row, got := rowWithRecords(t, led, out.RowID)

			keptReqs, keptDecisions := keptRun(t, r, tr)
			kept := row
			kept.Name, kept.ShedRate = "kept", nil // Record computes it from the records
			rec, err := led.Record(context.Background(), kept, keptReqs)
			if err != nil {
				t.Fatal(err)
			}
			keptRow, want := rowWithRecords(t, led, rec.ID)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("spooled records differ from the kept run's (-kept +spooled):\n%s", diff)
			}
			if !bytes.Equal(keptDecisions, decisions.Bytes()) {
				t.Errorf("decision record differs from the kept run's:\nkept:\n%s\nstreamed:\n%s", keptDecisions, decisions.Bytes())
			}
			if fmt.Sprint(*keptRow.ShedRate) != fmt.Sprint(*row.ShedRate) {
				t.Errorf("shed rate %v spooled, %v kept", *row.ShedRate, *keptRow.ShedRate)
			}
			var receipts, unfinished, ooo int
			for i, q := range got {
				if len(q.Receipt) > 0 {
					receipts++
				}
				if q.ErrorType == driver.ErrNotSent || q.ErrorType == driver.ErrIncomplete {
					unfinished++
				}
				if i > 0 && q.ActualSendMs+q.E2ELMs < got[i-1].ActualSendMs+got[i-1].E2ELMs && q.Status == ledger.RequestOK {
					ooo++
				}
			}
			t.Logf("%d records, %d with receipts, %d not sent or incomplete, %d finished before the request before them; %d decision bytes",
				len(got), receipts, unfinished, ooo, decisions.Len())
			if len(got) != 300 || receipts == 0 || ooo == 0 || (maxSeconds != "0") != (unfinished > 0) {
				t.Errorf("%d records (want 300), %d receipts, %d out of order, %d unfinished: the run does not exercise what it should",
					len(got), receipts, ooo, unfinished)
			}
		})
	}
}

// Issue 30, item 2: the heap a virtual trial retains does not grow with
// its request count: its records are spooled as they complete, not held
// until the row is written. The live heap after a collection at the moment
// the row is written (when a trial holding its records holds all of them),
// above the heap before the trial, for a 2,000- and an 8,000-request
// trial: the growth per request stays well below what one held record
// weighs (its struct and ITLs, over 300 bytes here). (During the run the
// summary keeps 8 bytes per latency value, up to SearchExactValues per
// metric, as a search's runs do.)
func TestVirtualTrialHeapIndependentOfRequests(t *testing.T) {
	retained := func(n int) int64 {
		led, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer led.Close()
		at := &heapAtRecord{l: led}
		r, err := New(Options{Ledger: at, WorkDir: t.TempDir(), ScheduleDelayLimit: noOverload, EngineLagRatioLimit: noEngineLagBound})
		if err != nil {
			t.Fatal(err)
		}
		tr := parseSpec(t, fmt.Sprintf(heapSpec, n))[0]
		runtime.GC()
		base := liveHeap()
		out := runOK(t, r, tr)
		reqs, err := led.Requests(context.Background(), out.RowID)
		if err != nil || len(reqs) != n {
			t.Fatalf("%d records in the ledger (%v), want %d", len(reqs), err, n)
		}
		return int64(at.live) - int64(base)
	}
	small, large := retained(2000), retained(8000)
	perRequest := (float64(large) - float64(small)) / 6000
	t.Logf("live heap when the row is written, above the start: %d B (2,000 requests), %d B (8,000): %.0f B per request", small, large, perRequest)
	if perRequest > 64 {
		t.Errorf("the retained heap grows by %.0f B per request (2,000: %d B, 8,000: %d B), want at most 64 B: records held in memory?",
			perRequest, small, large)
	}
}

// heapAtRecord reads the live heap, after a collection, when the row is
// written.
type heapAtRecord struct {
	l    *ledger.Ledger
	live uint64
}

func (h *heapAtRecord) RecordSeq(ctx context.Context, t ledger.Trial, reqs iter.Seq2[ledger.Request, error]) (ledger.Recorded, error) {
	runtime.GC()
	h.live = liveHeap()
	return h.l.RecordSeq(ctx, t, reqs)
}

const heapSpec = `
name: heap
seed: 3
clock: virtual
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 1, engine: {model: sim-llama-3-8b}}
workload: {kind: random, input_len: 64, output_len: 4, num_prompts: %d, arrival: {kind: poisson, request_rate: 400}}
warmup: {requests: 0}
`

// liveHeap is what the latest collection found reachable.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Nothing of a trial's spool is left in the temporary directory, after a
// run that ended ok or one whose context had ended (Ctrl-C).
func TestSpoolLeavesNoFile(t *testing.T) {
	r, _ := newTestRunner(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	tr := parseSpec(t, strings.Replace(streamedSpec, "%MAX%", "0", 1))[0]
	runOK(t, r, tr)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := r.Run(ctx, tr)
	if err == nil || out.Status != ledger.StatusAborted {
		t.Fatalf("cancelled run: status %s, err %v; want aborted with an error", out.Status, err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%d files left in the temporary directory, first %s", len(left), left[0].Name())
	}
}

// A real-time trial spools its records too: the ledger holds one per
// request, with the embedded router's receipt, agreeing with the summary
// the driver streamed them into (completed count, mean TTFT), and no spool
// file is left.
func TestRealTrialSpoolsItsRecords(t *testing.T) {
	r, led := newTestRunner(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	out := runOK(t, r, parseSpec(t, fmt.Sprintf(tinySpec, "round_robin"))[0])
	_, reqs := rowWithRecords(t, led, out.RowID)
	if len(reqs) != 24 {
		t.Fatalf("%d records, want 24", len(reqs))
	}
	ok, ttft := 0, 0.0
	for i, q := range reqs {
		if q.Index != i || len(q.Receipt) == 0 {
			t.Errorf("record %d: index %d, receipt %q; want every index once, each with a receipt", i, q.Index, q.Receipt)
		}
		if q.Status == ledger.RequestOK {
			ok++
			ttft += q.TTFTMs
		}
	}
	if s := out.Summary; ok != s.Completed || ok == 0 || math.Abs(ttft/float64(ok)-s.MeanTTFTMs) > 1e-9*s.MeanTTFTMs {
		t.Errorf("records: %d ok, mean TTFT %v; summary: %d completed, mean TTFT %v", ok, ttft/float64(ok), s.Completed, s.MeanTTFTMs)
	}
	spools, err := filepath.Glob(filepath.Join(dir, "autoinfer-records-*"))
	if err != nil || len(spools) > 0 {
		t.Errorf("spool files left: %v (%v)", spools, err)
	}
}
