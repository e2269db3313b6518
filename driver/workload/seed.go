package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
)

// PhaseMeasured is the phase of a run's measured requests (the driver's
// warm-up is another phase, with sources of its own).
const PhaseMeasured = "measured"

// PhaseSource returns the Source of one phase of a trial's run: a PCG seeded
// from SHA-256 of (version, phase, seed, trial id, purpose, index). Hashing
// makes neighbouring seeds and indices independent, and the fixed encoding
// makes the streams the same on every platform and Go version that keeps
// PCG. The driver sends from these sources, so LongestRequest, which builds
// from them too, names a request the run sends.
func PhaseSource(phase string, seed int64, trialID string) Source {
	return func(purpose string, index int) *rand.Rand {
		h := sha256.New()
		for _, part := range []string{"autoinfer/driver/v1", phase, strconv.FormatInt(seed, 10), trialID, purpose, strconv.Itoa(index)} {
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write([]byte(part))
		}
		sum := h.Sum(nil)
		return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
	}
}
