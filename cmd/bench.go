package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/autoinfer/autoinfer/driver"
)

// newBenchCmd is `autoinfer bench`: vllm bench serve's flags and output,
// driven by the seeded driver.
func newBenchCmd() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench [ttft:MS tpot:MS e2el:MS]",
		Short: "Benchmark an OpenAI-compatible server like vllm bench serve",
		Long: `bench sends a seeded workload to any OpenAI-compatible server (a simulated
engine, the router, real vLLM) on an arrival schedule and prints vllm bench
serve's results block. Flags follow vllm bench serve's names; --goodput values
may follow the flag space-separated, as there. The saved JSON uses vllm's
result keys plus autoinfer's (schedule delay, achieved rate, error breakdown,
trial id, seed, stream hash); definitions are in docs/metrics.md, workload
knobs in docs/workloads.md.`,
		Example: `  autoinfer bench --base-url http://127.0.0.1:8000 --model sim-llama-3-8b \
    --dataset-name random --random-input-len 512 --random-output-len 64 \
    --num-prompts 200 --request-rate 10 --seed 1 --save-result --result-dir out

  autoinfer bench --port 8000 --dataset-name shared_prefix --gsp-num-groups 8 \
    --max-concurrency 16 --goodput ttft:500 tpot:50

  OPENAI_API_KEY=... autoinfer bench --base-url http://10.0.0.5:8000 \
    --tokenizer meta-llama/Llama-3.1-8B-Instruct --dataset-name sharegpt \
    --dataset-path ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 500

  autoinfer bench --port 8000 --profile sweep --rates 8 --goodput ttft:300 tpot:40`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd, f, args)
		},
	}
	f.register(cmd)
	return cmd
}

func runBench(cmd *cobra.Command, f *benchFlags, args []string) error {
	if err := f.goodputArgs(args); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if cfg.Model == "" {
		if cfg.Model, err = firstModel(ctx, cfg); err != nil {
			return withCode(ExitInfra, fmt.Errorf("--model not given: %w", err))
		}
	}
	if _, err := driver.Generate(cfg); err != nil {
		return usageErr("%s", f.flagError(err))
	}
	if err := checkContext(ctx, f, cfg); err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.profile == ProfileSweep {
		return runSweep(ctx, f, cfg, out, errOut)
	}
	fmt.Fprintf(out, "Traffic request rate: %s\nBurstiness factor: %s\nMaximum request concurrency: %s\n",
		rateString(cfg.Arrival.RequestRate), burstinessString(cfg.Arrival), concurrencyString(cfg.Arrival.MaxConcurrency))
	prog := newProgress(errOut, !f.disableTqdm && isTerminal(out))
	res, runErr := driver.Run(ctx, cfg, driver.WithProgress(prog.update))
	prog.finish()
	if res == nil {
		return withCode(ExitInfra, runErr)
	}
	printResults(out, res, f.percentileMetrics, f.metricPercentiles, cfg.Goodput.Set())
	if err := f.save(out, res); err != nil {
		return withCode(ExitInfra, err)
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return withCode(ExitInterrupted, fmt.Errorf("bench interrupted: %w", runErr))
	case runErr != nil:
		return withCode(ExitInfra, runErr)
	case res.Summary.Completed == 0:
		return withCode(ExitFailed, fmt.Errorf("bench: all %d requests failed (by type: %v)", res.Summary.Failed, res.Summary.ErrorsByType))
	}
	return nil
}

// isTerminal decides between a progress bar and plain progress lines: w
// must be a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
