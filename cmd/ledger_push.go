package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

// newLedgerPushCmd copies the local ledger's rows into another one, a
// team's PostgreSQL ledger as a rule.
func newLedgerPushCmd(o *ledgerOpts) *cobra.Command {
	var to string
	c := &cobra.Command{
		Use:   "push --to URL",
		Short: "Copy this ledger's rows into another (a team's PostgreSQL ledger), each row once",
		Long: `Copy every row of --ledger (with its request records) that the ledger --to does
not hold yet. A row is identified by its name, start and finish times, run id,
seed, spec, clock, engine and router hashes, so pushing twice copies each row
once. Columns are copied as stored; the destination numbers the rows, and the
stale rule is applied between the copied rows and the destination's in the
order they finished (docs/ledger.md, "Push and pull").`,
		Example: `  autoinfer ledger push --ledger autoinfer.db --to postgres://autoinfer@db.example:5432/ledger`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return ledgerCopy(c, o, o.path, to, false, "pushed")
		},
	}
	c.Flags().StringVar(&to, "to", "", "ledger to copy into: a postgres:// URL (or a SQLite file, created if missing)")
	return c
}

// newLedgerPullCmd copies a team ledger's rows into the local one.
func newLedgerPullCmd(o *ledgerOpts) *cobra.Command {
	var from string
	c := &cobra.Command{
		Use:   "pull --from URL",
		Short: "Copy another ledger's rows (a team's PostgreSQL ledger) into this one, each row once",
		Long: `Copy every row of the ledger --from (with its request records) that --ledger does
not hold yet, for offline analysis; --ledger is created if missing. Rows keep
their ids where the local file has them free, so a pull into a new file
numbers the rows as the team ledger does. Pulling twice copies each row once.`,
		Example: `  autoinfer ledger pull --from postgres://autoinfer@db.example:5432/ledger --ledger team.db`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return ledgerCopy(c, o, from, o.path, true, "pulled")
		},
	}
	c.Flags().StringVar(&from, "from", "", "ledger to copy from: a postgres:// URL (or a SQLite file)")
	return c
}

// ledgerCopy opens src read-only and dst for writing (migrating it) and
// copies.
func ledgerCopy(c *cobra.Command, o *ledgerOpts, from, to string, keepIDs bool, verb string) error {
	if o.output != "table" && o.output != "json" {
		return usageErr("--output %q: want table or json", o.output)
	}
	if from == "" || to == "" {
		return usageErr("%s: want a ledger to copy from and one to copy into (--from / --to)", verb)
	}
	if from == to {
		return usageErr("%s: %s is both the source and the destination", verb, ledger.Redact(from))
	}
	ctx := c.Context()
	src, err := ledger.OpenReadOnly(ctx, from)
	if err != nil {
		return openErr(from, err)
	}
	defer src.Close()
	dst, err := ledger.Open(ctx, to)
	if err != nil {
		return openErr(to, err)
	}
	defer dst.Close()
	res, err := ledger.Copy(ctx, src, dst, ledger.CopyOptions{KeepIDs: keepIDs})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w (the rows copied so far are committed; run it again to finish)", err)
		}
		return withCode(ExitInfra, err)
	}
	if o.output == "json" {
		return ledgerRender(c.OutOrStdout(), "json", ledgerTable{}, struct {
			From string `json:"from"`
			To   string `json:"to"`
			ledger.CopyResult
		}{src.Name(), dst.Name(), res})
	}
	fmt.Fprintf(c.OutOrStdout(), "%s %d rows (%d request records) from %s to %s; %d already there; %s marked stale\n",
		verb, res.Copied, res.Requests, src.Name(), dst.Name(), res.Present, plural(res.MarkedStale, "row"))
	return nil
}

// openErr classifies a failed open: a missing or foreign ledger is bad
// input, anything else (an unreachable server) infrastructure.
func openErr(location string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ledger.ErrNotLedger) {
		return usageErr("%s: %v", ledger.Redact(location), err)
	}
	return withCode(ExitInfra, err)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
