package ledger

import (
	"context"
	"fmt"
)

// Shed statuses: the answers of a router or engine refusing load (vLLM's
// and the router's 503, the queue's 429), as the requests table records
// them.
const (
	requestShed503 = "http_503"
	requestShed429 = "http_429"
)

// Shedding is how many of a side's offered (measured) requests were
// refused with 503 or 429.
type Shedding struct {
	Offered int     `json:"offered"`
	Shed    int     `json:"shed"`
	Rate    float64 `json:"rate"` // Shed / Offered (0 without requests)
}

// shedding counts a side's offered and shed requests from its request
// records.
func (l *Ledger) shedding(ctx context.Context, s Side) (Shedding, error) {
	var sh Shedding
	for _, id := range s.IDs {
		var row struct {
			Offered int `db:"offered"`
			Shed    int `db:"shed"`
		}
		if err := l.db.GetContext(ctx, &row, l.db.Rebind(`SELECT COUNT(*) AS offered,
			COALESCE(SUM(CASE WHEN status IN (?, ?) THEN 1 ELSE 0 END), 0) AS shed
			FROM requests WHERE trial_id = ?`), requestShed503, requestShed429, id); err != nil {
			return Shedding{}, fmt.Errorf("counting shed requests of trial %d: %w", id, err)
		}
		sh.Offered += row.Offered
		sh.Shed += row.Shed
	}
	if sh.Offered > 0 {
		sh.Rate = float64(sh.Shed) / float64(sh.Offered)
	}
	return sh, nil
}

// shedFlag names a comparison whose better side shed a larger share of
// its offered requests than the other: a policy that wins by refusing
// requests must not look like a routing win. "" when neither side is
// better, or the better one shed no more.
func shedFlag(c Comparison, a, b Shedding) string {
	wins := map[string]int{}
	for _, d := range c.Metrics {
		if d.Better != "" {
			wins[d.Better]++
		}
	}
	for _, iv := range c.Intervals {
		if iv.Better != "" {
			wins[iv.Better]++
		}
	}
	better, other, bs, os := "", "", Shedding{}, Shedding{}
	switch {
	case wins["A"] > wins["B"]:
		better, other, bs, os = "A", "B", a, b
	case wins["B"] > wins["A"]:
		better, other, bs, os = "B", "A", b, a
	default:
		return ""
	}
	if bs.Rate <= os.Rate {
		return ""
	}
	return fmt.Sprintf("%s is better on more figures but shed %.1f %% of its offered requests (%d of %d, 503/429) against %s's %.1f %% (%d of %d): its gain may come from refusing requests",
		better, 100*bs.Rate, bs.Shed, bs.Offered, other, 100*os.Rate, os.Shed, os.Offered)
}
