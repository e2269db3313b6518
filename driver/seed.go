package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strconv"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// Phases of a run; each derives its own random sources, so the warm-up
// stream shares no state with the measured one.
const (
	phaseMeasured = "measured"
	phaseWarmup   = "warmup"
)

// source returns the workload.Source of one phase: a PCG seeded from
// SHA-256 of (version, phase, seed, trial id, purpose, index). Hashing makes
// neighbouring seeds and indices independent, and the fixed encoding makes
// the streams the same on every platform and Go version that keeps PCG.
func source(phase string, seed int64, trialID string) workload.Source {
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
