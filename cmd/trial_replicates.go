package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// replicateRuns expands each trial into its runs: itself when run once,
// else its replicates in order, under a new replicate group id.
func replicateRuns(ts []trials.Trial) []trials.Trial {
	var runs []trials.Trial
	for _, t := range ts {
		n := t.Replicates()
		if n == 1 || t.SameAs != "" {
			// A trial the same as an earlier one is not run at all, so
			// it has no replicates either.
			runs = append(runs, t)
			continue
		}
		group := newReplicateGroup()
		for i := range n {
			runs = append(runs, t.Replica(i, group))
		}
	}
	return runs
}

// newReplicateGroup returns a fresh group id. It is random, not derived
// from the spec: running a repeated spec twice measures it twice, and the
// second run's replicates (same seeds) must not join the first run's
// group, or the interval would count equal-seed runs as independent.
func newReplicateGroup() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "rg-" + hex.EncodeToString(b[:])
}

// runLabel names a run in progress output.
func runLabel(t trials.Trial) string {
	if t.Replicate.Group == "" {
		return t.Name
	}
	return fmt.Sprintf("%s (replicate %d/%d, seed %d)", t.Name, t.Replicate.Index+1, t.Replicates(), t.Seed)
}

// groupResults reads back each replicate group recorded in this run. A
// group the ledger cannot read is reported as such rather than dropped.
func groupResults(ctx context.Context, led *ledger.Ledger, groups []string) []ledger.GroupResult {
	out := make([]ledger.GroupResult, 0, len(groups))
	for _, g := range groups {
		r, err := led.ReplicateGroup(ctx, g)
		if err != nil {
			r = ledger.GroupResult{Group: g, Missing: "reading the group back: " + err.Error()}
		}
		out = append(out, r)
	}
	return out
}

// groupTableMetrics are the metrics the table shows per group (JSON output
// has every metric).
func groupTableMetrics() []string {
	return []string{"request_throughput", "output_throughput", "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms",
		"prefix_cache_hit_rate", "request_goodput", "failed"}
}

// renderGroups writes each repeated trial's result: mean ± half width and
// the interval per metric, or why there is none.
func renderGroups(w io.Writer, gs []ledger.GroupResult) {
	for _, g := range gs {
		ids := make([]string, len(g.IDs))
		for i, id := range g.IDs {
			ids[i] = strconv.FormatInt(id, 10)
		}
		fmt.Fprintf(w, "\nReplicate group %s, %s: %d of %d replicates ok (rows %s)", g.Group, g.Name, g.OK, g.Replicates, strings.Join(ids, ","))
		if !g.Complete() {
			fmt.Fprintf(w, "\n  no mean or interval: %s\n  (an incomplete group does not compete in ledger pareto or compare)\n", g.Missing)
			continue
		}
		fmt.Fprintf(w, ", mean ± %g%% Student t interval (%d df):\n", 100*g.Confidence, g.Replicates-1)
		for _, name := range groupTableMetrics() {
			e, ok := g.Metric(name)
			if !ok {
				continue
			}
			fmt.Fprintf(w, "  %-22s %12s ± %-10s [%s, %s]\n", name, ledgerNum(e.Mean), ledgerNum(e.HalfWidth()), ledgerNum(e.Lo), ledgerNum(e.Hi))
		}
	}
}
