package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// A phase source is the PCG its documented seed gives: SHA-256 of the
// parts (version, phase, seed, trial id, purpose, index) each written as
// its 8-byte length and its bytes, the first 16 bytes of the digest the
// PCG's seeds. Long parts (past the source's stack buffer) included.
func TestPhaseSourceSeedsAsDocumented(t *testing.T) {
	long := strings.Repeat("trial-", 60)
	for _, c := range []struct {
		phase, trial, purpose string
		seed                  int64
		index                 int
	}{
		{PhaseMeasured, "t", "block", 1, 0},
		{"warmup", "", "unique-trace", -7, 12031},
		{PhaseMeasured, long, "partial-block", 1 << 40, 3},
		{PhaseMeasured, "t", long, 0, -1},
	} {
		h := sha256.New()
		for _, part := range []string{"autoinfer/driver/v1", c.phase, strconv.FormatInt(c.seed, 10), c.trial, c.purpose, strconv.Itoa(c.index)} {
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write([]byte(part))
		}
		sum := h.Sum(nil)
		want := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
		got := PhaseSource(c.phase, c.seed, c.trial)(c.purpose, c.index)
		for i := range 4 {
			if g, w := got.Uint64(), want.Uint64(); g != w {
				t.Fatalf("%+v: draw %d is %d, want %d", c, i, g, w)
			}
		}
	}
}
