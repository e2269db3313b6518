package sim_test

import (
	"runtime"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// MemoryBytes is an upper bound of what a server really holds, and not a
// wild one: a server with a million KV blocks on two ranks is built and the
// live heap it adds is measured (after a GC, so only what it keeps counts).
func TestMemoryBytesBoundsHeap(t *testing.T) {
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	opts := sim.Options{Profile: p, Engine: engine.Config{Model: "m", NumGPUBlocksOverride: 1 << 20, DataParallelSize: 2}}
	est, err := sim.MemoryBytes(opts)
	if err != nil {
		t.Fatal(err)
	}
	live := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := live()
	s, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	used := live() - before
	runtime.KeepAlive(s)
	t.Logf("estimate %d B, measured %d B (ratio %.2f)", est, used, float64(est)/float64(used))
	if est < used {
		t.Errorf("estimate %d B is below the %d B the server holds", est, used)
	}
	if est > 4*used {
		t.Errorf("estimate %d B is over 4× the %d B the server holds: the check would refuse trials that fit", est, used)
	}
}
