package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSimCmd is a placeholder until its issue lands.
func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sim",
		Short: "Run simulated vLLM engines (not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("sim: not built yet") },
	}
}
