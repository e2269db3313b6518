package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTrialCmd is a placeholder until its issue lands.
func newTrialCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "trial",
		Short: "Validate and run trials (not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("trial: not built yet") },
	}
}
