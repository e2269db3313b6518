package cmd

import "github.com/spf13/cobra"

// newSimCmd groups the simulated-engine commands.
func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run simulated vLLM engines",
		Long: `Simulated vLLM engines: OpenAI-compatible servers whose latencies come from a
step-based model of continuous batching on a named hardware profile.
See docs/sim.md.`,
	}
	cmd.AddCommand(newSimServeCmd(), newSimProfilesCmd(), newSimProfileCmd(), newSimCalibrateCmd(), newSimOverheadCmd())
	return cmd
}
