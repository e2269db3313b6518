package cmd

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/ledger"
)

// ledgerEnv sets the default of every --ledger flag, so a team's machines
// and CI name their shared PostgreSQL ledger once.
const ledgerEnv = "AUTOINFER_LEDGER"

// addLedgerFlag registers --ledger: a SQLite file or a postgres:// URL,
// by default $AUTOINFER_LEDGER, else autoinfer.db. The default shown in
// help has its password masked.
func addLedgerFlag(fs *pflag.FlagSet, p *string, usage string) {
	def := "autoinfer.db"
	if v := os.Getenv(ledgerEnv); v != "" {
		def = v
	}
	fs.StringVar(p, "ledger", def, usage+": a SQLite file or a postgres:// URL; $"+ledgerEnv+" sets the default")
	fs.Lookup("ledger").DefValue = ledger.Redact(def)
}
