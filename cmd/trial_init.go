package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/trials"
)

func newTrialInitCmd() *cobra.Command {
	var (
		output string
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented starter spec",
		Example: `  autoinfer trial init                      # writes trial.yaml
  autoinfer trial init --output nightly.yaml
  autoinfer trial init --output -           # to stdout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "-" {
				_, err := cmd.OutOrStdout().Write(trials.Starter)
				return err
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(output, flags, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return usageErr("%s exists; pass --force to overwrite it", output)
			}
			if err != nil {
				return usageErr("writing starter spec: %w", err)
			}
			if _, err := f.Write(trials.Starter); err != nil {
				f.Close()
				return fmt.Errorf("writing starter spec: %w", err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("writing starter spec: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\nnext: autoinfer trial validate %s\n", output, output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "trial.yaml", "file to write (- for stdout)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return cmd
}
