package search

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/trials"
)

// Options configure Run.
type Options struct {
	Ledger *ledger.Ledger
	// Parallel is how many candidates run at once (0: one per core).
	Parallel int
	// Resume skips candidates the search already recorded ok (a row of the
	// search id with the candidate's spec hash, not stale).
	Resume bool
	// Progress is told of each finished candidate (done of total, per
	// round under halving).
	Progress func(done, total int, name string)
	// Round is told of each halving round as it ends.
	Round  func(Round)
	Logger *slog.Logger
	// Remote, when set, runs the candidates instead of this process
	// (search --kubernetes); the rows it records in Ledger are read back.
	Remote Remote
}

// Candidate is one configuration of the space.
type Candidate struct {
	Trial trials.Trial
	// GPUs is what the deployment uses: workers × tensor × data parallel.
	GPUs int
	// RowID is its ledger row (0: not run); Resumed says the row was
	// already there.
	RowID   int64
	Resumed bool
	Status  ledger.Status
	// Values are the row's metrics (objective metrics per GPU included).
	Values map[string]float64
	// Violations are the SLO constraints the row breaks (feasible: none).
	Violations []string
}

// Feasible reports whether the candidate ran ok and meets every SLO.
func (c Candidate) Feasible() bool { return c.Status == ledger.StatusOK && len(c.Violations) == 0 }

// GPUs is how many GPUs t's deployment uses: workers × tensor parallel
// (the engine's, else a simulated profile's) × data parallel.
func GPUs(t trials.Trial) int {
	e := t.Topology.Engine
	tp := e.TensorParallelSize
	if so, ok := t.Target.Options.(*simtarget.Options); ok && tp == 0 {
		if p, err := so.Resolve(t.Topology.Engine); err == nil && p.Model != nil {
			tp = p.Model.TP
		}
	}
	return len(t.Topology.Target().Slots()) * max(tp, 1) * max(e.DataParallelSize, 1)
}

// Partition splits the space ts into the candidates that run (within the
// GPU budget) and those over it, in the space's order. A trial that is the
// same deployment as an earlier one under another name (SameAs) is in
// neither: its twin runs.
func Partition(s Spec, ts []trials.Trial) (run, over []Candidate) {
	for _, t := range ts {
		if t.SameAs != "" {
			continue
		}
		c := Candidate{Trial: t, GPUs: GPUs(t)}
		if b := s.Constraints.GPUs; b > 0 && c.GPUs != b {
			over = append(over, c)
			continue
		}
		run = append(run, c)
	}
	return run, over
}

// Run evaluates the candidates ts (Split's spec parsed, on the virtual
// clock) under s: those outside the GPU budget are left out (returned in
// over), the others run in parallel, each recorded as a virtual row of the
// search id. It returns every candidate in the space's order.
func Run(ctx context.Context, s Spec, ts []trials.Trial, o Options) (run, over []Candidate, err error) {
	if o.Ledger == nil {
		return nil, nil, errors.New("search: a ledger is required")
	}
	if len(ts) == 0 {
		return nil, nil, errors.New("search: the space has no candidates")
	}
	run, over = Partition(s, ts)
	if s.Strategy == StrategyHalving {
		run, err = halve(ctx, s, run, o)
		return run, over, err
	}
	return run, over, evaluateAll(ctx, s, run, batchOf(0, 1, run), o)
}

// evaluateAll runs the candidates without an ok row of the search (with
// Resume; all of them without), here or through o.Remote, then reads every
// row. b names cs (in order) for a Remote.
func evaluateAll(ctx context.Context, s Spec, cs []Candidate, b Batch, o Options) error {
	if len(cs) == 0 {
		return nil
	}
	if o.Resume {
		done, err := recorded(ctx, o.Ledger, cs[0].Trial.SweepID)
		if err != nil {
			return err
		}
		for i := range cs {
			if row, ok := done[cs[i].Trial.SpecHash]; ok {
				cs[i].RowID, cs[i].Resumed = row.ID, true
			}
		}
	}
	run := execute
	if o.Remote != nil {
		run = func(ctx context.Context, cs []Candidate, o Options) error { return runRemote(ctx, cs, b, o) }
	}
	if err := run(ctx, cs, o); err != nil {
		return err
	}
	for i := range cs {
		if err := evaluate(ctx, o.Ledger, s, &cs[i]); err != nil {
			return err
		}
	}
	return nil
}

// recorded are the search's ok, fresh virtual rows by spec hash.
func recorded(ctx context.Context, l *ledger.Ledger, id string) (map[string]ledger.Trial, error) {
	rows, err := l.List(ctx, ledger.Filter{SweepID: id, Status: ledger.StatusOK, IncludeVirtual: true})
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", id, err)
	}
	out := map[string]ledger.Trial{}
	for _, r := range rows {
		if _, ok := out[r.SpecHash]; !ok && r.Virtual() { // newest first
			out[r.SpecHash] = r
		}
	}
	return out, nil
}

// execute runs every candidate without a row, Parallel at a time, each
// worker with its own runner; rows are written one at a time.
func execute(ctx context.Context, cs []Candidate, o Options) error {
	par := o.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	rec := &serialRecorder{l: o.Ledger}
	// The candidates share one parsed workload per distinct workload (most
	// searches: one), read-only: a candidate costs its deployment's state,
	// not another copy of the trace (docs/whatif.md, search memory).
	shared := driver.NewWorkloads()
	todo := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	finished := 0
	for range par {
		r, err := adapter.New(adapter.Options{Ledger: rec, StreamVirtual: true, Workloads: shared, Logger: o.Logger})
		if err != nil {
			return err
		}
		g.Go(func() error {
			for i := range todo {
				out, err := r.Run(gctx, cs[i].Trial)
				if err != nil {
					return fmt.Errorf("candidate %s: %w", cs[i].Trial.Name, err)
				}
				mu.Lock()
				cs[i].RowID = out.RowID
				finished++
				if o.Progress != nil {
					o.Progress(finished, len(cs), cs[i].Trial.Name)
				}
				mu.Unlock()
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(todo)
		for i := range cs {
			if cs[i].Resumed {
				mu.Lock()
				finished++
				mu.Unlock()
				continue
			}
			select {
			case todo <- i:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	return g.Wait()
}

// serialRecorder writes one row at a time for parallel runners.
type serialRecorder struct {
	mu sync.Mutex
	l  *ledger.Ledger
}

func (s *serialRecorder) RecordSeq(ctx context.Context, t ledger.Trial, reqs iter.Seq2[ledger.Request, error]) (ledger.Recorded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l.RecordSeq(ctx, t, reqs)
}

// evaluate reads c's row: status, metrics (per GPU too) and the SLO
// constraints it breaks.
func evaluate(ctx context.Context, l *ledger.Ledger, s Spec, c *Candidate) error {
	row, err := l.Get(ctx, c.RowID)
	if err != nil {
		return fmt.Errorf("candidate %s: row %d: %w", c.Trial.Name, c.RowID, err)
	}
	c.Status, c.Values = row.Status, row.Values()
	for name, v := range row.Values() {
		c.Values[name+"_per_gpu"] = v / float64(c.GPUs)
	}
	for _, a := range s.Constraints.slo {
		v, ok := c.Values[a.Metric]
		if !ok {
			c.Violations = append(c.Violations, a.Metric+" not measured")
		} else if !a.Holds(v) {
			c.Violations = append(c.Violations, fmt.Sprintf("%s = %.4g, want %s", a.Metric, v, a))
		}
	}
	return nil
}
