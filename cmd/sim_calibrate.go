package cmd

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
)

func newSimCalibrateCmd() *cobra.Command {
	var vidur, out string
	var obs calibrateObserveFlags
	var led calibrateLedgerFlags
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Fit a profile to a live server (--observe), or regenerate the step-model tables from vidur's data",
		Long: `With --observe URL: probe a live OpenAI-compatible server (vLLM or any
other) within --budget, fit the step model's coefficients with their
standard errors and write a profile file that records the server, the probe
seed and the fit's held-out error; a server the step model does not describe
gets a profile marked unfit, with the reason (exit 1). See docs/sim.md.

With --vidur: read microsoft/vidur's published per-operation GPU timings (the calibration
bundle's compute/, network/, model_configs/ and extracts/) and write the
compact tables the simulated engine's step model uses (tables_gen.go) and the
rows the golden tests check them against (testdata/). The build never reads
the bundle; run this only to recalibrate. See docs/sim.md.`,
		Example: `  autoinfer sim calibrate --observe http://127.0.0.1:8000 --base h100-llama3-8b --profile-file my-h100.yaml --budget 5m
  autoinfer sim calibrate --vidur ../shared/data/vidur --out target/sim/stepmodel`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (obs.url != "") && led.on || (obs.url != "" || led.on) && vidur != "" {
				return usageErr("--observe, --from-ledger and --vidur: give one")
			}
			if !led.on {
				for _, fl := range []string{"ledger", "name", "sweep", "where", "bound", "include-virtual", "before"} {
					if cmd.Flags().Changed(fl) {
						return usageErr("--%s: only with --from-ledger", fl)
					}
				}
			}
			if obs.url != "" {
				return runSimCalibrateObserve(cmd, &obs)
			}
			if led.on {
				return runSimCalibrateLedger(cmd, &led, &obs)
			}
			if vidur == "" {
				return usageErr("--vidur, --observe or --from-ledger: one is required")
			}
			if _, err := os.Stat(filepath.Join(vidur, "COLUMNS.md")); err != nil {
				return usageErr("--vidur %s: not a vidur calibration bundle (no COLUMNS.md)", vidur)
			}
			if _, err := os.Stat(filepath.Join(out, "model.go")); err != nil {
				return usageErr("--out %s: not the stepmodel package directory (no model.go)", out)
			}
			return runSimCalibrate(cmd, vidur, out)
		},
	}
	cmd.Flags().StringVar(&vidur, "vidur", "", "directory of the vidur calibration bundle")
	addCalibrateObserveFlags(cmd, &obs)
	addCalibrateLedgerFlags(cmd, &led)
	cmd.Flags().StringVar(&out, "out", filepath.Join("target", "sim", "stepmodel"), "the stepmodel package directory to write into")
	return cmd
}

func runSimCalibrate(cmd *cobra.Command, dir, out string) error {
	v, err := stepmodel.ReadVidur(dir)
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("reading vidur data: %w", err))
	}
	c, err := stepmodel.Calibrate(v)
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("calibrating: %w", err))
	}
	src, err := c.GoSource()
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("rendering tables: %w", err))
	}
	var shipped []stepmodel.PairKey
	for _, k := range slices.SortedFunc(maps.Keys(c.Linear), func(a, b stepmodel.PairKey) int {
		if a.String() < b.String() {
			return -1
		}
		return 1
	}) {
		g, err := stepmodel.LookupGPU(k.GPU)
		if err == nil && stepmodel.Fits(v.Archs[k.Model], g, k.TP) {
			shipped = append(shipped, k)
		}
	}
	files := map[string][]byte{
		"tables_gen.go":                         src,
		"testdata/linear_heldout.csv":           c.HeldOutCSV(),
		"testdata/attention_a100_llama3_8b.csv": stepmodel.AttentionCSV(v.Attention),
		"testdata/vidur_grid.csv":               c.GridCSV(v, shipped),
	}
	if err := os.MkdirAll(filepath.Join(out, "testdata"), 0o755); err != nil {
		return withCode(ExitInfra, err)
	}
	// Write every file beside its target first, then rename: a failure
	// leaves the old tables whole.
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(out, name+".tmp"), files[name], 0o644); err != nil {
			return withCode(ExitInfra, fmt.Errorf("writing %s: %w", name, err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.Rename(filepath.Join(out, name+".tmp"), filepath.Join(out, name)); err != nil {
			return withCode(ExitInfra, fmt.Errorf("writing %s: %w", name, err))
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\n", filepath.Join(out, name), len(files[name]))
	}
	return nil
}
