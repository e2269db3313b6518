package cmd

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/target/kubernetes"
)

// newTrialRunnerCmd is the kubernetes target's in-cluster runner: the
// command its runner pod runs. It is not for people, so it is hidden.
func newTrialRunnerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "runner",
		Short:  "Run a trial handed over by the kubernetes target (its runner pod's command)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   runTrialRunner,
	}
}

// runTrialRunner reads the trial and its workers from the payload
// variable, runs it next to them, and prints the result on one line that
// starts with kubernetes.ResultPrefix (logs go to stderr).
func runTrialRunner(c *cobra.Command, _ []string) error {
	raw := os.Getenv(kubernetes.PayloadEnv)
	if raw == "" {
		return usageErr("trial runner: %s is not set (this command runs in the kubernetes target's runner pod)", kubernetes.PayloadEnv)
	}
	payload, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return usageErr("trial runner: %s: %v", kubernetes.PayloadEnv, err)
	}
	dir, err := os.MkdirTemp("", "autoinfer-runner-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))
	res, err := adapter.RunRemoteTrial(c.Context(), payload, targetkinds.All(), adapter.Options{WorkDir: dir, Logger: log})
	if err != nil {
		return withCode(ExitInfra, err)
	}
	fmt.Fprintf(c.OutOrStdout(), "%s%s\n", kubernetes.ResultPrefix, res)
	return nil
}
