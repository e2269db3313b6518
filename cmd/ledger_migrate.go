package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

// newLedgerMigrateCmd upgrades a ledger written by an older autoinfer. Read
// commands open ledgers read-only and never migrate, so a person decides
// when a shared file changes schema.
func newLedgerMigrateCmd(o *ledgerOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Upgrade a ledger written by an older autoinfer to this version's schema",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			name := ledger.Redact(o.path)
			if _, err := os.Stat(o.path); !ledger.IsPostgres(o.path) && errors.Is(err, fs.ErrNotExist) {
				return usageErr("--ledger %s: no such ledger file", name)
			}
			l, err := ledger.Open(c.Context(), o.path)
			if errors.Is(err, ledger.ErrNotLedger) {
				return usageErr("--ledger %s: %v", name, err)
			}
			if err != nil {
				return withCode(ExitInfra, err)
			}
			if err := l.Close(); err != nil {
				return withCode(ExitInfra, fmt.Errorf("closing ledger: %w", err))
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: schema version %d\n", name, ledger.SchemaVersion())
			return nil
		},
	}
}
