package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/target/kubernetes"
)

// newTargetCmd groups commands about targets themselves.
func newTargetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "target",
		Short: "Manage what targets left behind",
	}
	cmd.AddCommand(newTargetCleanupCmd())
	return cmd
}

// targetCleanupFlags are the flags of `autoinfer target cleanup`.
type targetCleanupFlags struct {
	kubernetes                     bool
	namespace, kubeconfig, context string
	timeout                        time.Duration
}

func newTargetCleanupCmd() *cobra.Command {
	var f targetCleanupFlags
	cmd := &cobra.Command{
		Use:   "cleanup --kubernetes",
		Short: "Delete what killed trials left on a cluster",
		Long: `Delete every object a trial created that is still there because autoinfer was
killed before its teardown (SIGKILL, a lost machine): with --kubernetes, every
object labelled autoinfer.io/trial (fresh trial namespaces whole, Deployments
with their pods), in --namespace only when given. It waits until they are gone.`,
		Example: `  autoinfer target cleanup --kubernetes
  autoinfer target cleanup --kubernetes --namespace bench --context gpu-cluster`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runTargetCleanup(c, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.kubernetes, "kubernetes", false, "clean up the kubernetes target's objects (the only kind that leaves any)")
	fl.StringVar(&f.namespace, "namespace", "", "only this namespace (default: every labelled namespace and deployment)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fl.StringVar(&f.context, "context", "", "kubeconfig context (default: the current one)")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for the deletions")
	return cmd
}

func runTargetCleanup(c *cobra.Command, f targetCleanupFlags) error {
	if !f.kubernetes {
		return usageErr("target cleanup: say which target: --kubernetes")
	}
	if f.timeout <= 0 {
		return usageErr("--timeout: must be positive, got %s", f.timeout)
	}
	client, err := kubernetes.Client(f.kubeconfig, f.context)
	if err != nil {
		return usageErr("%v", err)
	}
	ctx, cancel := context.WithTimeout(c.Context(), f.timeout)
	defer cancel()
	left, err := kubernetes.Cleanup(ctx, client, f.namespace)
	for _, l := range left {
		fmt.Fprintln(c.OutOrStdout(), "deleted", l)
	}
	if err != nil {
		return withCode(ExitInfra, err)
	}
	if len(left) == 0 {
		fmt.Fprintln(c.OutOrStdout(), "nothing to clean up")
	}
	return nil
}
