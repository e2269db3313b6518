package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
)

// profileRow is one line of `autoinfer sim profiles`.
type profileRow struct {
	Name                string  `json:"name"`
	GPU                 string  `json:"gpu,omitempty"`
	Model               string  `json:"model,omitempty"`
	TP                  int     `json:"tensor_parallel_size,omitempty"`
	Linear              string  `json:"linear_layers"`
	GPUSource           string  `json:"gpu_source,omitempty"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	NumGPUBlocks        int     `json:"num_gpu_blocks"`
	DecodeStepMs        float64 `json:"decode_step_ms_b1"`
	Accuracy            string  `json:"accuracy"`
	Source              string  `json:"source"`
}

func newSimProfilesCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the simulated engine's hardware profiles with their source and measured error",
		Long: `List every built-in profile: calibrated ones named <gpu>-<model>[-tp<N>]
(step model from vidur's measured GPU timings, see docs/sim.md) and the
linear test profile "fast". For each: whether its linear layers are measured
or derived from the architecture, whether its GPU was measured or derived
from its datasheet (with the stated error band), vLLM V1's defaults, its KV
capacity, a decode step at batch 1 and 1k context, and what the golden tests
measured its error to be.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows := profileRows()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				for _, r := range rows {
					if err := enc.Encode(r); err != nil {
						return withCode(ExitInfra, err)
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(w, "PROFILE\tGPU\tLINEAR\tSEQS\tBATCHED\tKV BLOCKS\tDECODE B=1\tMEASURED ERROR")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%.2f ms\t%s\n", r.Name, r.GPUSource, r.Linear, r.MaxNumSeqs, r.MaxNumBatchedTokens,
					r.NumGPUBlocks, r.DecodeStepMs, r.Accuracy)
			}
			if err := w.Flush(); err != nil {
				return withCode(ExitInfra, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\ntables %s; sources: autoinfer sim profiles --json, docs/sim.md\n", stepmodel.TablesVersion)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per profile, with its full source")
	return cmd
}

func profileRows() []profileRow {
	var rows []profileRow
	for _, name := range sim.ProfileNames() {
		p, err := sim.LookupProfile(name)
		if err != nil {
			continue
		}
		seqs, batched := p.MaxNumSeqs, p.MaxNumBatchedTokens
		if seqs == 0 {
			seqs, batched = 256, 8192 // the engine's defaults for linear profiles
		}
		r := profileRow{Name: name, Linear: "linear formula", MaxNumSeqs: seqs, MaxNumBatchedTokens: batched,
			NumGPUBlocks: p.NumGPUBlocks, DecodeStepMs: float64(p.StepTime(0, 1, 1024).Microseconds()) / 1e3,
			Accuracy: "not a model of any hardware", Source: p.Source}
		if m := p.Model; m != nil {
			r.GPU, r.Model, r.TP = m.GPU.Name, m.Arch.Name, m.TP
			r.GPUSource = "measured"
			if b := m.GPU.ErrorBand; b > 0 {
				r.GPUSource = fmt.Sprintf("derived ±%.0f%%", 100*b)
			}
			r.Linear = "derived"
			if m.Measured {
				r.Linear = "measured"
			}
			r.Accuracy = m.Accuracy()
		}
		rows = append(rows, r)
	}
	return rows
}

func newSimProfileCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "profile", Short: "Work with profile files (derive one for any model and GPU)", Args: cobra.NoArgs}
	cmd.AddCommand(newSimProfileDeriveCmd())
	return cmd
}

func newSimProfileDeriveCmd() *cobra.Command {
	var cfgPath, gpu, out string
	var eng engine.Config
	cmd := &cobra.Command{
		Use:   "derive",
		Short: "Write a profile file for a Hugging Face config.json on a built-in GPU",
		Long: `Derive a profile for the model in --model-config on --gpu with vLLM's engine
settings (tensor parallelism, weight and KV precision, expert parallelism)
and write it as a profile file: its provenance, its stated error, the
model's architecture and the settings. A trial spec's target.profile_file
names it. A model that does not fit its GPUs is refused with the numbers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfgPath == "" || gpu == "" || eng.Model == "" {
				return usageErr("--model-config, --gpu and --model: all required")
			}
			data, err := os.ReadFile(cfgPath)
			if err != nil {
				return usageErr("--model-config: %w", err)
			}
			b, err := sim.DeriveProfileFile(gpu, data, eng)
			if err != nil {
				return usageErr("--model-config %s: %w", cfgPath, err)
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(b)
			} else {
				err = os.WriteFile(out, b, 0o644)
			}
			if err != nil {
				return withCode(ExitInfra, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfgPath, "model-config", "", "the model's Hugging Face config.json")
	fl.StringVar(&gpu, "gpu", "", "GPU: "+strings.Join(stepmodel.GPUNames(), ", "))
	fl.StringVar(&eng.Model, "model", "", "served model name")
	fl.StringVar(&out, "out", "-", "file to write (- : stdout)")
	fl.IntVar(&eng.TensorParallelSize, "tensor-parallel-size", 1, "GPUs per engine")
	fl.IntVar(&eng.DataParallelSize, "data-parallel-size", 0, "data-parallel ranks (with --enable-expert-parallel: the experts spread over TP x DP)")
	fl.StringVar(&eng.Quantization, "quantization", "", "weight format (default: the checkpoint's)")
	fl.StringVar(&eng.KVCacheDtype, "kv-cache-dtype", "", "KV cache dtype: auto or fp8")
	fl.BoolVar(&eng.EnableExpertParallel, "enable-expert-parallel", false, "expert parallelism")
	return cmd
}
