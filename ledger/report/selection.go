package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/ledger"
)

// Selection says which rows a report covers: one sweep, every row with a
// name, a list of ids, or (all zero) the newest Limit rows of the ledger.
// Rows of every status are shown (failed ones in the table only); stale
// rows are included and marked.
type Selection struct {
	SweepID string
	Name    string
	IDs     []int64
	// Limit caps a whole-ledger report (default DefaultLimit); the page
	// says how many rows it left out. It does not apply to the other forms.
	Limit int
}

// Validate reports every problem, naming the flags.
func (s Selection) Validate() error {
	var errs []error
	n := 0
	for _, set := range []bool{s.SweepID != "", s.Name != "", len(s.IDs) > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, errors.New("--sweep, --name and trial ids: give at most one"))
	}
	for i, id := range s.IDs {
		if id <= 0 {
			errs = append(errs, fmt.Errorf("ids[%d]: want a positive trial id, got %d", i, id))
		}
	}
	if s.Limit < 0 {
		errs = append(errs, fmt.Errorf("limit: must be >= 0, got %d", s.Limit))
	}
	return errors.Join(errs...)
}

// String describes the selection for the page.
func (s Selection) String() string {
	switch {
	case s.SweepID != "":
		return "sweep " + s.SweepID
	case s.Name != "":
		return "trials named " + s.Name
	case len(s.IDs) > 0:
		ids := make([]string, len(s.IDs))
		for i, id := range s.IDs {
			ids[i] = strconv.FormatInt(id, 10)
		}
		return "trials " + strings.Join(ids, ", ")
	}
	return "the whole ledger"
}

// rows loads the selected rows in id order, with a note when a
// whole-ledger report left rows out. A selection that matches nothing is
// an error wrapping ledger.ErrNotFound.
func (s Selection) rows(ctx context.Context, src Source) ([]ledger.Trial, string, error) {
	var out []ledger.Trial
	var note string
	switch {
	case len(s.IDs) > 0:
		seen := map[int64]bool{}
		for _, id := range s.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			t, err := src.Get(ctx, id)
			if err != nil {
				return nil, "", err
			}
			out = append(out, t)
		}
	case s.SweepID != "" || s.Name != "":
		ts, err := src.List(ctx, ledger.Filter{SweepID: s.SweepID, Name: s.Name, IncludeStale: true})
		if err != nil {
			return nil, "", err
		}
		out = ts
	default:
		limit := cmp.Or(s.Limit, DefaultLimit)
		ts, err := src.List(ctx, ledger.Filter{IncludeStale: true, Limit: limit + 1})
		if err != nil {
			return nil, "", err
		}
		if len(ts) > limit {
			ts = ts[:limit] // List returns newest first
			note = fmt.Sprintf("The ledger holds more than %d rows; this report shows the newest %d (select a sweep, a name or ids, or raise --limit).", limit, limit)
		}
		out = ts
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("%s: %w", s, ledger.ErrNotFound)
	}
	slices.SortFunc(out, func(a, b ledger.Trial) int { return cmp.Compare(a.ID, b.ID) })
	return out, note, nil
}
