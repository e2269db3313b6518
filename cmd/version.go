package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time by the Makefile (-X); "dev" otherwise.
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print autoinfer's version and the Go toolchain that built it",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			goVersion := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVersion = bi.GoVersion
			}
			fmt.Fprintf(c.OutOrStdout(), "autoinfer %s (%s)\n", version, goVersion)
			return nil
		},
	}
}
