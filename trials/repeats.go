package trials

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/autoinfer/autoinfer/trials/field"
)

// MaxRepeats bounds repeats: past a few dozen replicates the interval
// barely narrows, while a typo (300 for 3) would queue hours of runs.
const MaxRepeats = 100

// Replicate says which replicate of a repeated trial this is. Group is
// empty for a trial run once.
type Replicate struct {
	// Group is shared by the replicates of one run of a repeated trial.
	Group string `json:"replicate_group,omitempty"`
	// Index is 0 … Replicates()-1; replicate 0 runs with the spec's seed.
	Index int `json:"replicate_index,omitempty"`
}

// Replicates is how many times the trial runs: Repeats, or 1 when unset.
func (s Spec) Replicates() int { return max(1, s.Repeats) }

// validateRepeats checks repeats when the spec wrote it.
func validateRepeats(s *Spec, present func(string) bool, p *problems) {
	if present("repeats") {
		p.nest("", field.Between("repeats", s.Repeats, 1, MaxRepeats))
	}
}

// normaliseRepeats stores one run as 0, so that writing `repeats: 1`, or
// `--repeats 1`, leaves the spec hash of a spec without the key.
func normaliseRepeats(s *Spec) {
	if s.Repeats == 1 {
		s.Repeats = 0
	}
}

// SetRepeats overrides every trial's repeats (the --repeats flag) and
// recomputes the spec hashes and the sweep id, which cover it. n must be in
// 1 … MaxRepeats; flag names the option in the error.
func SetRepeats(ts []Trial, n int, flag string) error {
	if err := field.Between(flag, n, 1, MaxRepeats); err != nil {
		return err
	}
	for i := range ts {
		if n > 1 && ts[i].IsSweep() {
			return fmt.Errorf("%s: trial %s is a sweep, which is not repeated (its rates come from its own first runs)", flag, ts[i].Name)
		}
	}
	for i := range ts {
		ts[i].Repeats = n
		normaliseRepeats(&ts[i].Spec)
		h, err := ts[i].Hash()
		if err != nil {
			return err
		}
		ts[i].SpecHash = h
	}
	if len(ts) > 0 && ts[0].SweepID != "" {
		id := sweepID(ts)
		for i := range ts {
			ts[i].SweepID = id
		}
	}
	return nil
}

// Replica returns replicate i of t in group: the same trial with the seed
// DeriveSeed(t.Seed, i). The name, spec hash and sweep id stay the
// trial's: the replicates are one trial measured several times.
func (t Trial) Replica(i int, group string) Trial {
	r := t
	r.Seed = DeriveSeed(t.Seed, i)
	r.Replicate = Replicate{Group: group, Index: i}
	return r
}

// DeriveSeed is replicate i's seed: the base seed itself for i = 0 (so a
// repeated trial's first replicate sends the same bytes as the trial run
// once), otherwise the first 8 bytes, big-endian, of
// SHA-256("autoinfer/replicate/<base>/<i>") with the sign bit cleared. It
// depends on nothing but base and i: re-running a spec repeats its seeds,
// and replicate i of two trials with one base seed sends the same requests.
func DeriveSeed(base int64, i int) int64 {
	if i == 0 {
		return base
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "autoinfer/replicate/%d/%d", base, i))
	return int64(binary.BigEndian.Uint64(sum[:8]) & math.MaxInt64)
}

// sweepID derives a sweep's id from its trials' spec hashes, so the same
// sweep definition always has the same id.
func sweepID(ts []Trial) string {
	h := sha256.New()
	for _, t := range ts {
		h.Write([]byte(t.SpecHash))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
