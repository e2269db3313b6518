package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// exportModel is the model name put in the bodies an export renders; the
// trace does not carry it.
const exportModel = "export"

func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workload", Short: "Work with workloads: export a seeded workload as a trace"}
	cmd.AddCommand(newWorkloadExportCmd())
	return cmd
}

func newWorkloadExportCmd() *cobra.Command {
	f := &benchFlags{}
	var output string
	var blockSize int
	var noPrompts bool
	cmd := &cobra.Command{
		Use:   "export --output FILE [bench's workload, arrival and seed flags]",
		Short: "Write a seeded workload as a Mooncake-format trace (JSON Lines)",
		Long: `export builds the request stream bench would send with the same flags
(dataset, --num-prompts, arrival, --seed, --trial-id; or --workload-file) and
writes it as a Mooncake-format trace: one line per request with timestamp (ms,
the intended send time), input_length, output_length, hash_ids (chained block
hashes of --block-size tokens), session_id and, unless --no-prompts, the prompt.
Replaying the file (--dataset-name trace) sends the same requests; other tools
that read Mooncake traces replay the same lengths, timing and prefix sharing.
Server, result and SLO flags are accepted and ignored. multi_turn cannot be
exported: its later turns are due after earlier answers, which a trace cannot say.`,
		Example: `  autoinfer workload export --dataset-name shared_prefix --gsp-num-groups 4 \
    --num-prompts 64 --request-rate 8 --seed 1 --output sp.jsonl
  autoinfer bench --port 8000 --dataset-name trace --dataset-path sp.jsonl --num-prompts 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "" {
				return usageErr("--output: required (the trace file to write)")
			}
			if blockSize <= 0 {
				return usageErr("--block-size: must be > 0, got %d", blockSize)
			}
			reqs, tok, err := exportRequests(f)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := workload.WriteMooncakeTrace(&buf, reqs, tok, workload.ExportOptions{BlockSize: blockSize, Prompts: !noPrompts}); err != nil {
				return usageErr("%v", err)
			}
			if err := writeFileAtomic(output, buf.Bytes()); err != nil {
				return usageErr("--output: %v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d requests to %s\n", len(reqs), output)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "trace file to write (JSON Lines)")
	cmd.Flags().IntVar(&blockSize, "block-size", 512, "tokens per hash_ids block (Mooncake's traces use 512)")
	cmd.Flags().BoolVar(&noPrompts, "no-prompts", false, "write lengths and hash_ids only, not the prompt texts")
	return cmd
}

// exportRequests renders the stream the flags describe on the completions
// endpoint, whose body carries the whole prompt as one text.
func exportRequests(f *benchFlags) ([]workload.ExportRequest, workload.Tokenizer, error) {
	cfg, err := f.config()
	if err != nil {
		return nil, nil, err
	}
	if cfg.Workload.Kind == workload.MultiTurn {
		return nil, nil, usageErr("--dataset-name: multi_turn cannot be exported: later turns are due after earlier answers, which a trace cannot say")
	}
	cfg.Endpoint, cfg.Backend = driver.CompletionsEndpoint, "openai"
	if cfg.Model == "" {
		cfg.Model = exportModel
	}
	st, err := driver.Generate(cfg)
	if err != nil {
		return nil, nil, usageErr("%s", f.flagError(err))
	}
	out := make([]workload.ExportRequest, len(st.Requests))
	for i, q := range st.Requests {
		var body struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal(q.Body, &body); err != nil {
			return nil, nil, fmt.Errorf("request %d: reading its body: %w", i, err)
		}
		out[i] = workload.ExportRequest{Prompt: body.Prompt, OutputTokens: q.MaxTokens, Offset: q.Offset, Session: q.Session}
	}
	return out, cfg.Tokenizer, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so a failure leaves no half-written trace.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
