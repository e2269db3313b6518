package cmd

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs the CLI with args and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := interruptible(stderr)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "autoinfer: %v\n", err)
	}
	return exitCode(err)
}

// interruptible is the CLI's context, cancelled by SIGINT or SIGTERM. The
// command then winds down: a trial tears its deployment down and records
// its aborted row, however long that write takes. A further signal does
// not cut that short (it would leave a process target's workers running in
// their own process groups and lose the row); the first one says so on
// stderr. stop releases the handler; the notice is deregistered first, so
// it is printed on a signal only.
func interruptible(stderr io.Writer) (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	release := context.AfterFunc(ctx, func() { fmt.Fprintln(stderr, interruptNotice) })
	return ctx, func() {
		release()
		stop()
	}
}

// interruptNotice is what the CLI prints on its first SIGINT or SIGTERM
// (adapter's TestTrialRunInterruptedBySIGINT reads it).
const interruptNotice = "autoinfer: interrupted; tearing down and recording what was measured"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "autoinfer",
		Short: "Measure LLM serving deployments: topology, routing policy, workload, quality",
		Long: `autoinfer runs reproducible trials against LLM serving deployments.

For every trial it provisions inference workers (simulated vLLM engines by
default, or real vLLM servers), starts a router in front of them under a named
policy, warms it, drives a seeded workload through it, checks output quality
against a reference replica and writes one row to a SQLite ledger.`,
		Example: `  # run a trial (or a sweep) described by a spec
  autoinfer trial run trials/examples/quickstart.yaml

  # serve four simulated vLLM engines on free ports
  autoinfer sim serve --replicas 4 --port 0

  # benchmark any OpenAI-compatible server like vllm bench serve
  autoinfer bench --base-url http://127.0.0.1:8000 --model sim-llama-3-8b --num-prompts 200

  # which topology and policy give the most tokens/s under a TTFT p99 bound?
  autoinfer ledger pareto --x p99_ttft_ms --y output_throughput`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Flag parse errors are bad input.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	root.AddCommand(
		newVersionCmd(),
		newSimCmd(),
		newRouterCmd(),
		newBenchCmd(),
		newLedgerCmd(),
		newTrialCmd(),
		newWorkloadCmd(),
		newTargetCmd(),
		newSearchCmd(),
		newSearchShardCmd(),
	)
	usageArgs(root)
	return root
}

// usageArgs makes every argument error bad input (exit 2), as flag errors
// are: a wrong count of positional arguments, and an unknown subcommand,
// which cobra would otherwise answer with the parent's help and exit 0.
func usageArgs(c *cobra.Command) {
	if !c.Runnable() && c.HasSubCommands() {
		c.Args = cobra.NoArgs
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	if args := c.Args; args != nil {
		c.Args = func(c *cobra.Command, a []string) error { return withCode(ExitUsage, args(c, a)) }
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}
