package cmd

import "github.com/spf13/cobra"

// newTrialCmd groups the trial subcommands.
func newTrialCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trial",
		Short: "Validate, scaffold and run trial specs",
		Long: `A trial spec (YAML, reference in docs/spec.md) describes workers, a router, a
workload and the checks a run must pass. A matrix in the spec expands it into
one trial per combination, all with the same seed.`,
	}
	cmd.AddCommand(newTrialValidateCmd(), newTrialInitCmd(), newTrialRunCmd(), newTrialRunnerCmd())
	return cmd
}
