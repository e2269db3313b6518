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
	fixed := appendPart(nil, "autoinfer/driver/v1")
	fixed = appendPart(fixed, phase)
	fixed = appendPart(fixed, strconv.FormatInt(seed, 10))
	fixed = appendPart(fixed, trialID)
	return func(purpose string, index int) *rand.Rand {
		// The digest of the parts written one after another: the parts the
		// phase fixes encoded once, one buffer hashed per source.
		var buf [256]byte
		b := append(buf[:0], fixed...)
		b = appendPart(b, purpose)
		b = appendPart(b, strconv.Itoa(index))
		sum := sha256.Sum256(b)
		return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
	}
}

// appendPart appends a part as the seed encodes it: its length (8 bytes,
// little-endian), then its bytes.
func appendPart(b []byte, part string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(part)))
	return append(b, part...)
}
