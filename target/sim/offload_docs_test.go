package sim

import (
	"os"
	"strings"
	"testing"
)

// TestDocsDescribeTheOffloadTier is issue 19, acceptance 6 (sim):
// docs/sim.md has a section on the CPU tier that names every series the
// tier exports, its knobs and the sources of its coefficients.
func TestDocsDescribeTheOffloadTier(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sim.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## KV offload tier")
	if !ok {
		t.Fatal("docs/sim.md has no \"## KV offload tier\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	fams, err := newMetrics(&config{ranks: 1, model: "m"}).reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var tier int
	for _, f := range fams {
		name := f.GetName()
		if !strings.Contains(name, "offload") && !strings.Contains(name, "external_prefix_cache") {
			continue
		}
		tier++
		if !strings.Contains(section, strings.TrimSuffix(name, "_total")) {
			t.Errorf("the offload section does not name the series %s", name)
		}
	}
	if tier == 0 {
		t.Error("the sim exports no CPU-tier series")
	}
	for _, want := range []string{"--kv-offload-gib", "kv_offload_gbps", "kv_offload_block_us", "LRU", "PCIe"} {
		if !strings.Contains(section, want) {
			t.Errorf("the offload section does not mention %s", want)
		}
	}
}
