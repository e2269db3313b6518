package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newBenchCmd is a placeholder until its issue lands.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "Benchmark an OpenAI-compatible server like vllm bench serve (not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("bench: not built yet") },
	}
}
