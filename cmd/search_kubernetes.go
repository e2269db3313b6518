package cmd

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/kubernetes"
	"github.com/autoinfer/autoinfer/trials"
)

// The environment a search shard's pod gets: the search's spec (the search
// block taken out, base64), the batch (JSON) and the number of shards;
// the Job sets JOB_COMPLETION_INDEX and the ledger comes from a Secret.
const (
	shardSpecEnv  = "AUTOINFER_SEARCH_SPEC"
	shardBatchEnv = "AUTOINFER_SEARCH_BATCH"
	shardCountEnv = "AUTOINFER_SEARCH_SHARDS"
	shardIndexEnv = "JOB_COMPLETION_INDEX"
)

// kubeRemote runs each batch of a search as an Indexed Job: pod i runs
// shard i of the batch with `autoinfer search-shard` and records its rows
// in the shared ledger.
type kubeRemote struct {
	job  *kubernetes.SearchJob
	spec []byte
	pods int
}

var _ search.Remote = (*kubeRemote)(nil)

func (k *kubeRemote) Run(ctx context.Context, b search.Batch) error {
	batch, err := json.Marshal(b)
	if err != nil {
		return err
	}
	pods := max(1, min(k.pods, len(b.Names)))
	return k.job.Run(ctx, pods, []string{"search-shard"}, map[string]string{
		shardSpecEnv: base64.StdEncoding.EncodeToString(k.spec), shardBatchEnv: string(batch), shardCountEnv: strconv.Itoa(pods),
	})
}

// checkKubernetes refuses a search --kubernetes that lacks what it needs,
// before the ledger is opened: the spec's search.kubernetes block, and a
// PostgreSQL ledger, which the pods write their rows to.
func checkKubernetes(s search.Spec, ledgerLocation string) error {
	if s.Kubernetes == nil {
		return usageErr("--kubernetes: the spec has no search.kubernetes block (at least image: autoinfer's own image; docs/whatif.md)")
	}
	if !ledger.IsPostgres(ledgerLocation) {
		return usageErr("--kubernetes: --ledger must be a postgres:// URL the cluster's pods reach (they record the candidates' rows there), got %s", ledger.Redact(ledgerLocation))
	}
	return nil
}

// startKubeRemote creates the search's namespace and ledger Secret.
func startKubeRemote(ctx context.Context, s search.Spec, spec []byte, id, ledgerLocation string) (*kubeRemote, error) {
	job, err := kubernetes.StartSearchJob(ctx, *s.Kubernetes, id, ledgerLocation)
	if err != nil {
		return nil, withCode(ExitInfra, fmt.Errorf("search on kubernetes: %w", err))
	}
	return &kubeRemote{job: job, spec: spec, pods: cmp.Or(s.Kubernetes.Pods, kubernetes.DefaultSearchPods)}, nil
}

// newSearchShardCmd is what a search's pods run. It is not for people, so
// it is hidden.
func newSearchShardCmd() *cobra.Command {
	var ledgerLocation string
	c := &cobra.Command{
		Use:    "search-shard",
		Short:  "Run one shard of a search --kubernetes batch (its pods' command)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			sh, ts, err := shardFromEnv()
			if err != nil {
				return err
			}
			ctx := c.Context()
			l, err := ledger.Open(ctx, ledgerLocation)
			if err != nil {
				return withCode(ExitInfra, err)
			}
			defer l.Close()
			out := c.OutOrStdout()
			err = search.RunShard(ctx, ts, sh, search.Options{Ledger: l,
				Logger: slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn})),
				Progress: func(done, total int, name string) {
					fmt.Fprintf(out, "shard %d/%d: %d/%d %s\n", sh.Index, sh.Count, done, total, name)
				}})
			if err != nil {
				return withCode(ExitInfra, err)
			}
			return nil
		},
	}
	addLedgerFlag(c.Flags(), &ledgerLocation, "ledger to record the shard's rows in")
	return c
}

// shardFromEnv reads the shard a pod runs and the search's candidates.
func shardFromEnv() (search.Shard, []trials.Trial, error) {
	var sh search.Shard
	spec, err := base64.StdEncoding.DecodeString(os.Getenv(shardSpecEnv))
	if err != nil || len(spec) == 0 {
		return sh, nil, usageErr("search-shard: %s is not set or not base64 (this command runs in a search --kubernetes pod)", shardSpecEnv)
	}
	if err := json.Unmarshal([]byte(os.Getenv(shardBatchEnv)), &sh.Batch); err != nil {
		return sh, nil, usageErr("search-shard: %s: %v", shardBatchEnv, err)
	}
	if sh.Index, err = strconv.Atoi(os.Getenv(shardIndexEnv)); err != nil {
		return sh, nil, usageErr("search-shard: %s: %v", shardIndexEnv, err)
	}
	if sh.Count, err = strconv.Atoi(os.Getenv(shardCountEnv)); err != nil {
		return sh, nil, usageErr("search-shard: %s: %v", shardCountEnv, err)
	}
	ts, err := trials.Parse(spec, targetkinds.All())
	if err != nil {
		return sh, nil, usageErr("search-shard: spec: %v", err)
	}
	if err := trials.SetClock(ts, trials.ClockVirtual, "search"); err != nil {
		return sh, nil, usageErr("search-shard: spec: %v", err)
	}
	return sh, ts, nil
}
