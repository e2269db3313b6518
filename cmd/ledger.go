package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLedgerCmd is a placeholder until its issue lands.
func newLedgerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ledger",
		Short: "Query the trial ledger (not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("ledger: not built yet") },
	}
}
