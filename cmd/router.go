package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRouterCmd is a placeholder until its issue lands.
func newRouterCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "router",
		Short: "Run the embedded router (not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("router: not built yet") },
	}
}
