package adapter

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/hostmem"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/trials"
)

// The shipped examples fit a small machine; each part of the estimate is
// there when its component runs.
func TestEstimateMemoryOfExamples(t *testing.T) {
	files, err := filepath.Glob("../trials/examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, file := range files {
		ts, err := trials.Load(file, targetkinds.All())
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			f, err := EstimateMemory(tr)
			if err != nil {
				t.Fatalf("%s: %v", tr.Name, err)
			}
			t.Logf("%s: %s", tr.Name, f)
			if f.Total() > 2<<30 {
				t.Errorf("%s: %s; an example must fit 2 GiB", tr.Name, f)
			}
			if f.Driver <= 0 || (tr.RouterLaunched() != (f.Router > 0)) {
				t.Errorf("%s: %+v: missing a part", tr.Name, f)
			}
		}
	}
}

func parseOne(t *testing.T, spec string) trials.Trial {
	t.Helper()
	ts, err := trials.Parse([]byte(spec), targetkinds.All())
	if err != nil {
		t.Fatal(err)
	}
	return ts[0]
}

// The estimate grows with what the spec asks for: ten times the prompts
// about ten times the driver's part, more KV blocks the engines', and a
// concurrency cap lowers what is in flight at once.
func TestEstimateMemoryScales(t *testing.T) {
	base := "name: s\ntopology: {replicas: 2, engine: {model: m%s}}\nworkload: {kind: random, num_prompts: %d, input_len: 1000, output_len: 100%s}\n"
	est := func(engine string, n int, arrival string) Footprint {
		f, err := EstimateMemory(parseOne(t, fmt.Sprintf(base, engine, n, arrival)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	small, big := est("", 10_000, ""), est("", 100_000, "")
	if r := float64(big.Driver) / float64(small.Driver); r < 9 || r > 11 {
		t.Errorf("driver %d → %d for 10× the prompts (ratio %.2f)", small.Driver, big.Driver, r)
	}
	blocks := est(", num_gpu_blocks_override: 1000000", 10_000, "")
	if blocks.Engines-small.Engines < 2*1_000_000*64 {
		t.Errorf("engines %d → %d with a million more blocks on each of 2 engines", small.Engines, blocks.Engines)
	}
	capped := est("", 100_000, ", arrival: {max_concurrency: 10}")
	if capped.Engines >= big.Engines || capped.Router >= big.Router {
		t.Errorf("a concurrency cap of 10 must lower what is in flight: %+v vs %+v", capped, big)
	}
}

func TestCheckMemoryRefusesOverLimit(t *testing.T) {
	tr := parseOne(t, "name: s\ntopology: {replicas: 2, engine: {model: m}}\nworkload: {kind: random, num_prompts: 1000}\n")
	f, err := EstimateMemory(tr)
	if err != nil {
		t.Fatal(err)
	}
	limit := hostmem.Limit{Bytes: f.Total() - 1, Source: "test limit"}
	err = CheckMemory([]trials.Trial{tr}, limit)
	var me *MemoryError
	if !errors.As(err, &me) || me.Footprint != f || !strings.Contains(err.Error(), "test limit") ||
		!strings.Contains(err.Error(), "trial s needs an estimated") {
		t.Fatalf("CheckMemory = %v", err)
	}
	if err := CheckMemory([]trials.Trial{tr}, hostmem.Limit{Bytes: f.Total(), Source: "test limit"}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
}
