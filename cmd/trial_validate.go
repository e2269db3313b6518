package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/driver/arrival"
	"github.com/autoinfer/autoinfer/trials"
)

func newTrialValidateCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "validate SPEC",
		Short: "Check a spec and list the trials it expands to",
		Long: `Decode the spec strictly (unknown keys are errors), apply defaults, expand the
variants and the matrix and validate every trial. Every problem of every
trial is listed at once with its path and line, and exits with status 2.
A trial that runs the same as an earlier one after defaults (its settings
have no effect) is listed with RUNS "no: same as …"; trial run skips it.

A spec with a search: block is checked as autoinfer search reads it: the
block's space, constraints (GPU budget, SLO bounds) and objective, and
every candidate of the space; it prints how many candidates the space
expands to and how many of them the search would run.`,
		Example: `  autoinfer trial validate trials/examples/quickstart.yaml
  autoinfer trial validate spec.yaml --output json   # the expanded, defaulted trials
  autoinfer trial validate trials/examples/search/gpu8.yaml   # a search: its candidate count`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErr("--output: must be text or json, got %q", output)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return usageErr("reading spec: %w", err)
			}
			if search.HasBlock(data) {
				return validateSearch(cmd.OutOrStdout(), args[0], output)
			}
			ts, err := trials.Load(args[0], targetkinds.All())
			if err != nil {
				return usageErr("%w", err)
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(ts)
			}
			return printTrials(cmd.OutOrStdout(), args[0], ts)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json (the expanded, defaulted trials)")
	return cmd
}

// validateSearch checks a spec with a search: block and says how many
// candidates its space expands to, how many the GPU budget leaves out and
// how many are the same deployment as another; the json output is the
// candidates that would run.
func validateSearch(w io.Writer, path, output string) error {
	_, s, ts, err := loadSearch(path)
	if err != nil {
		return err
	}
	run, over := search.Partition(s, ts)
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		cs := make([]trials.Trial, len(run))
		for i, c := range run {
			cs[i] = c.Trial
		}
		return enc.Encode(cs)
	}
	head := fmt.Sprintf("%s: valid search (sweep %s), %d candidates in the space", path, ts[0].SweepID, len(ts))
	if same := len(ts) - len(run) - len(over); same > 0 {
		head += fmt.Sprintf(", %d the same deployment as another", same)
	}
	if len(over) > 0 {
		head += fmt.Sprintf(", %d outside the GPU budget of %d", len(over), s.Constraints.GPUs)
	}
	fmt.Fprintf(w, "%s: %d candidates to run\n", head, len(run))
	if len(run) == 0 {
		return usageErr("%s: search.constraints.gpus: no candidate of the space uses exactly %d GPUs", path, s.Constraints.GPUs)
	}
	return nil
}

// printTrials lists the trials with what distinguishes them.
func printTrials(w io.Writer, file string, ts []trials.Trial) error {
	head := fmt.Sprintf("%s: valid, %d trial", file, len(ts))
	if len(ts) != 1 {
		head += "s"
	}
	if ts[0].SweepID != "" {
		head += " (sweep " + ts[0].SweepID + ")"
	}
	runs := 0
	for _, t := range ts {
		runs += t.Replicates()
	}
	if runs != len(ts) {
		head += fmt.Sprintf(", %d runs with repeats", runs)
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRIAL\tTARGET\tTOPOLOGY\tROUTER\tWORKLOAD\tSPEC\tRUNS")
	for _, t := range ts {
		runs := "yes"
		if t.SameAs != "" {
			runs = "no: same as " + t.SameAs + " (" + t.SameBecause + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Target.Kind, topologyText(t.Topology), routerText(t), workloadText(t.Workload), t.SpecHash[:12], runs)
	}
	return tw.Flush()
}

func topologyText(t trials.Topology) string {
	if t.PD() {
		return fmt.Sprintf("%dP+%dD", t.Prefill, t.Decode)
	}
	return fmt.Sprintf("%d replicas", t.Replicas)
}

func routerText(t trials.Trial) string {
	if !t.RouterLaunched() {
		return "none (direct)"
	}
	r := t.Router
	if r.PDDisaggregation {
		return fmt.Sprintf("%s pd %s/%s", r.Launch, r.PrefillPolicy, r.DecodePolicy)
	}
	return r.Launch + " " + r.Policy
}

func workloadText(w trials.Workload) string {
	var b strings.Builder
	b.WriteString(w.Kind)
	if w.NumPrompts > 0 {
		fmt.Fprintf(&b, " n=%d", w.NumPrompts)
	}
	if w.Arrival.RequestRate > 0 {
		fmt.Fprintf(&b, " @%g/s", w.Arrival.RequestRate)
	}
	if w.Arrival.Kind == arrival.Sweep {
		fmt.Fprintf(&b, " sweep: synchronous, throughput, %d rates", w.Arrival.Normalized().Rates)
	}
	return b.String()
}
