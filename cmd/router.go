package cmd

import "github.com/spf13/cobra"

// newRouterCmd groups the embedded router's commands.
func newRouterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "router",
		Short: "Run the embedded LLM router in front of OpenAI-compatible workers",
		Long: `The embedded router behaves like vllm-project/router: the same routes, policies
(random, round_robin, power_of_two, consistent_hash, cache_aware, least_loaded),
retries, circuit breakers, health checks and vllm_router_ metrics, with exact
per-worker load accounting. See docs/router.md.`,
	}
	cmd.AddCommand(newRouterServeCmd())
	return cmd
}
