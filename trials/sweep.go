package trials

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/driver/arrival"
)

// Runs of a saturation sweep (workload.arrival.kind: sweep), as guidellm's
// sweep profile: a synchronous run (one request at a time), a throughput
// run (everything at once), then constant rates spaced evenly between the
// two request rates they achieved. The rates are known only once the first
// two runs have finished, so a sweep trial is expanded while it runs, not
// when the spec is parsed: Parse returns the sweep as one trial (IsSweep),
// and the runner asks it for each run's trial (SweepRun).
const (
	SweepSynchronous = arrival.SweepSynchronous
	SweepThroughput  = arrival.SweepThroughput
	// SweepRate is the role of each constant-rate run.
	SweepRate = "rate"
)

// IsSweep reports whether t is a saturation sweep.
func (t Trial) IsSweep() bool { return t.Workload.Arrival.Kind == arrival.Sweep }

// SweepRates is the number of constant rates t measures.
func (t Trial) SweepRates() int { return t.Workload.Arrival.Normalized().Rates }

// SweepRoundRate rounds a rate to the 4 significant digits a trial name shows,
// so the name and the rate the run offers agree.
func SweepRoundRate(rate float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(rate, 'g', 4, 64), 64)
	return r
}

// SweepRun returns the trial of one run of sweep t: t with the run's
// arrival (max_concurrency and, for the rates, burstiness kept), named
// after t plus "sweep=synchronous", "sweep=throughput" or
// "workload.arrival.request_rate=R" (as a hand-written matrix of rates
// would be, so reports group them alike), with its own spec hash and t's
// sweep id. A sweep outside a matrix gets an id derived from its spec hash,
// so a re-run of the same sweep has the same id. The runs share t's stream
// name, hence its seeded request bytes: only the arrival differs. rate is
// used for SweepRate only and must be > 0 there.
func (t Trial) SweepRun(role string, rate float64) (Trial, error) {
	a := t.Workload.Arrival
	run := t
	run.Settings = append([]Setting(nil), t.Settings...)
	var set Setting
	switch role {
	case SweepSynchronous:
		run.Workload.Arrival = arrival.Arrival{Kind: arrival.ClosedLoop, MaxConcurrency: 1}
		set = Setting{Path: "sweep", Value: SweepSynchronous}
	case SweepThroughput:
		run.Workload.Arrival = arrival.Arrival{Kind: arrival.Inf, MaxConcurrency: a.MaxConcurrency}
		set = Setting{Path: "sweep", Value: SweepThroughput}
	default:
		rate = SweepRoundRate(rate)
		run.Workload.Arrival = arrival.Arrival{Kind: arrival.Constant, RequestRate: rate, MaxConcurrency: a.MaxConcurrency}
		set = Setting{Path: "workload.arrival.request_rate", Value: strconv.FormatFloat(rate, 'g', -1, 64)}
	}
	if err := run.Workload.Arrival.Validate(); err != nil {
		return Trial{}, err
	}
	run.Settings = append(run.Settings, set)
	sep := "/"
	if strings.Contains(t.Name, "/") {
		sep = ","
	}
	run.Name = t.Name + sep + set.Path + "=" + set.Value
	hash, err := run.Hash()
	if err != nil {
		return Trial{}, err
	}
	run.SpecHash = hash
	if run.SweepID == "" {
		sum := sha256.Sum256([]byte("sweep\x00" + t.SpecHash))
		run.SweepID = hex.EncodeToString(sum[:])[:16]
	}
	return run, nil
}

// validateSweep checks what a sweep needs of the rest of the spec.
func validateSweep(s *Spec, p *problems) {
	if s.Workload.Arrival.Kind != arrival.Sweep {
		return
	}
	if s.SLO == (SLO{}) {
		p.add("slo", "a sweep's knee is the highest rate whose requests meet the SLOs: set ttft_ms, tpot_ms or e2el_ms")
	}
	if s.Workload.Arrival.Burstiness != 0 {
		p.add("workload.arrival.burstiness", "a sweep's rates arrive at constant spacing (as guidellm's); remove burstiness")
	}
	if s.Workload.MaxSeconds != 0 {
		p.add("workload.max_seconds", "a sweep runs every request of each run; remove max_seconds")
	}
	if s.Baseline != "" {
		p.add("baseline", "a sweep records one row per rate; compare rows with `ledger compare` instead")
	}
	if s.Repeats > 1 {
		p.add("repeats", "a sweep is not repeated (its rates come from its own first runs); repeat a trial at a fixed rate instead")
	}
}
