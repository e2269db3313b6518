package ledger

import (
	"context"
	"fmt"
	"strings"
)

// Shed statuses: the answers of a router or engine refusing load (vLLM's
// and the router's 503, the queue's 429), as the requests table records
// them.
const (
	requestShed503 = "http_503"
	requestShed429 = "http_429"
)

// ShedRate is the share of reqs refused with 503 or 429 (the shed_rate
// column); nil without requests.
func ShedRate(reqs []Request) *float64 {
	var c ShedCount
	for _, r := range reqs {
		c.Add(r)
	}
	return c.Rate()
}

// ShedCount counts request records as they complete, for ShedRate over a
// run whose records are not held.
type ShedCount struct{ offered, shed int }

// Add counts r.
func (c *ShedCount) Add(r Request) {
	c.offered++
	if r.Status == requestShed503 || r.Status == requestShed429 {
		c.shed++
	}
}

// Rate is ShedRate of the records counted.
func (c *ShedCount) Rate() *float64 {
	if c.offered == 0 {
		return nil
	}
	rate := float64(c.shed) / float64(c.offered)
	return &rate
}

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

// shedFlag names the figures a comparison calls the side that shed a
// larger share of its offered requests better on: a policy that wins by
// refusing requests must not look like a routing win. "" when the sides
// shed alike or the shedding side wins nothing.
func shedFlag(c Comparison, a, b Shedding) string {
	shedder, other, ss, os := "A", "B", a, b
	if b.Rate > a.Rate {
		shedder, other, ss, os = "B", "A", b, a
	} else if a.Rate <= b.Rate {
		return ""
	}
	var won []string
	for _, d := range c.Metrics {
		if d.Better == shedder {
			won = append(won, d.Metric)
		}
	}
	for _, iv := range c.Intervals {
		if iv.Better == shedder {
			won = append(won, iv.Metric+" (bootstrap)")
		}
	}
	if len(won) == 0 {
		return ""
	}
	return fmt.Sprintf("%s shed %.1f %% of its offered requests (%d of %d, 503/429) against %s's %.1f %% (%d of %d), yet is better on %d figure(s): %s; those gains may come from refusing requests",
		shedder, 100*ss.Rate, ss.Shed, ss.Offered, other, 100*os.Rate, os.Shed, os.Offered, len(won), strings.Join(won, ", "))
}
