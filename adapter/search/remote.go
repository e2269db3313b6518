package search

import (
	"context"
	"errors"
	"fmt"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// Remote runs a batch of candidates somewhere else — search --kubernetes
// runs it as an Indexed Job whose pods each run a Shard — recording their
// rows in the ledger the search reads (a PostgreSQL ledger the remote
// workers reach). Run returns once every candidate of the batch has run.
type Remote interface {
	Run(ctx context.Context, b Batch) error
}

// Batch is one round's candidates: the names of the candidates (as the
// space names them, before halving shortens them) and, under halving, the
// round and the share of the traffic they run on (Fraction 1: all of it).
// The names and the spec determine the candidates, so a remote worker
// given the same spec runs the very trials a local search would.
type Batch struct {
	Round    int      `json:"round"`
	Fraction float64  `json:"fraction"`
	Names    []string `json:"names"`
}

func batchOf(round int, fraction float64, cs []Candidate) Batch {
	b := Batch{Round: round, Fraction: fraction, Names: make([]string, len(cs))}
	for i, c := range cs {
		b.Names[i] = c.Trial.Name
	}
	return b
}

// runRemote sends the candidates without a row (b names cs in order) to
// o.Remote and finds the rows it recorded: the newest row of each
// candidate's spec hash in the search, written after the batch started.
func runRemote(ctx context.Context, cs []Candidate, b Batch, o Options) error {
	todo := Batch{Round: b.Round, Fraction: b.Fraction}
	for i, c := range cs {
		if !c.Resumed {
			todo.Names = append(todo.Names, b.Names[i])
		}
	}
	if len(todo.Names) == 0 {
		return nil
	}
	all := ledger.Filter{IncludeStale: true, IncludeVirtual: true}
	newest, err := o.Ledger.List(ctx, ledger.Filter{IncludeStale: true, IncludeVirtual: true, Limit: 1})
	if err != nil {
		return err
	}
	var mark int64
	if len(newest) > 0 {
		mark = newest[0].ID
	}
	if err := o.Remote.Run(ctx, todo); err != nil {
		return err
	}
	all.SweepID = cs[0].Trial.SweepID
	rows := map[string]int64{} // spec hash → newest row after mark
	err = o.Ledger.Each(ctx, all, func(t ledger.Trial) error {
		if _, seen := rows[t.SpecHash]; !seen && t.ID > mark && t.Virtual() {
			rows[t.SpecHash] = t.ID
		}
		return nil
	})
	if err != nil {
		return err
	}
	var missing []error
	for i := range cs {
		if cs[i].Resumed {
			continue
		}
		id, ok := rows[cs[i].Trial.SpecHash]
		if !ok {
			missing = append(missing, fmt.Errorf("candidate %s: no row recorded by the remote run", cs[i].Trial.Name))
		}
		cs[i].RowID = id
		if o.Progress != nil {
			o.Progress(i+1, len(cs), cs[i].Trial.Name)
		}
	}
	return errors.Join(missing...)
}

// Shard is the part of a batch one remote worker runs: every Count-th
// name from Index on.
type Shard struct {
	Batch
	Index, Count int
}

// RunShard runs a remote worker's part of a batch: the candidates of ts
// (the search's spec parsed, on the virtual clock, as Run gets it) that the
// shard names, shortened as the round says, each recorded in o.Ledger as
// Run records it. Unknown names are an error: the worker's spec is not the
// search's.
func RunShard(ctx context.Context, ts []trials.Trial, sh Shard, o Options) error {
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return fmt.Errorf("shard %d of %d: want 0 <= index < count", sh.Index, sh.Count)
	}
	byName := map[string]trials.Trial{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	var cs []Candidate
	for i := sh.Index; i < len(sh.Names); i += sh.Count {
		t, ok := byName[sh.Names[i]]
		if !ok {
			return fmt.Errorf("shard %d of %d: the spec has no candidate %q", sh.Index, sh.Count, sh.Names[i])
		}
		c := Candidate{Trial: t, GPUs: GPUs(t)}
		if sh.Fraction < 1 {
			var err error
			if c, err = shorten(c, sh.Round, sh.Fraction); err != nil {
				return err
			}
		}
		cs = append(cs, c)
	}
	return execute(ctx, cs, o)
}
