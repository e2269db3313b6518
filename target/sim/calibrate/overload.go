package calibrate

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Host load. A probe reads the step model off wall-clock arrival times, so
// a host that runs the server or the probe late (a loaded machine: timers
// that fire late, goroutines that wait for a core) puts its lateness into
// every step it measures, and not evenly: a burst of newcomers, which
// costs the host most, is also when it falls behind most, so the fit
// reads the host's lateness as per-sequence cost. Each group is therefore
// judged by two witnesses and dropped when either says it ran late:
//
//   - the server's own step lag where it reports it (the simulated engine's
//     autoinfer:sim_step_lag_seconds_total against its modelled busy time,
//     autoinfer:sim_modelled_busy_seconds_total): how far its steps ended
//     behind their schedule while the group ran;
//   - the probe's own timers (every pause it takes): how late they fired,
//     against the group's median gap between tokens.
//
// A fit that could keep too few groups says so (Result.Unfit) rather than
// print a confident profile of the host's load.

// Default bounds of Config.MaxLagRatio and Config.MaxTimerLate.
const (
	DefaultMaxLagRatio  = 0.05
	DefaultMaxTimerLate = 0.10
)

// Load is how late the host ran one group.
type Load struct {
	// LagRatio is the server's step lag over its modelled busy time during
	// the group; LagKnown is false when the server does not report it.
	LagRatio float64 `json:"lag_ratio"`
	LagKnown bool    `json:"lag_known"`
	// TimerLate is the mean lateness of the probe's own timers during the
	// group, as a share of the group's median gap between tokens.
	TimerLate float64 `json:"timer_late"`
}

// overloaded says why the group ran too late to measure ("" when it did
// not).
func (l Load) overloaded(maxLag, maxLate float64) string {
	var why []string
	if l.LagKnown && l.LagRatio > maxLag {
		why = append(why, fmt.Sprintf("server steps %.1f %% late", 100*l.LagRatio))
	}
	if l.TimerLate > maxLate {
		why = append(why, fmt.Sprintf("probe timers %.0f %% of a token gap late", 100*l.TimerLate))
	}
	return strings.Join(why, ", ")
}

// timers are a group's pauses: each waits and records how late it woke.
type timers struct {
	mu   sync.Mutex
	late []time.Duration
}

// pause waits d or until ctx ends.
func (tm *timers) pause(ctx context.Context, d time.Duration) error {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	tm.mu.Lock()
	tm.late = append(tm.late, max(0, time.Since(start)-d))
	tm.mu.Unlock()
	return nil
}

// mean is the timers' mean lateness (0 with none).
func (tm *timers) mean() time.Duration {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if len(tm.late) == 0 {
		return 0
	}
	var sum time.Duration
	for _, l := range tm.late {
		sum += l
	}
	return sum / time.Duration(len(tm.late))
}

// lagCounters are the server's cumulative step lag and modelled busy time
// in seconds, summed over its engines.
type lagCounters struct{ lag, busy float64 }

// readLag scrapes the server's step lag counters; ok is false when it
// does not expose them (a real vLLM server has no modelled schedule to be
// late against).
func readLag(ctx context.Context, hc *http.Client, base string) (c lagCounters, ok bool) {
	var seenLag, seenBusy bool
	read := scrape(ctx, hc, base, func(line string) bool {
		var dst *float64
		switch {
		case strings.HasPrefix(line, "autoinfer:sim_step_lag_seconds_total"):
			dst, seenLag = &c.lag, true
		case strings.HasPrefix(line, "autoinfer:sim_modelled_busy_seconds_total"):
			dst, seenBusy = &c.busy, true
		default:
			return true
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				*dst += v
			}
		}
		return true
	})
	return c, read && seenLag && seenBusy
}

// ratio is the lag over the busy time between two readings.
func (c lagCounters) ratio(before lagCounters) float64 {
	busy := c.busy - before.busy
	if busy <= 0 {
		return 0
	}
	return (c.lag - before.lag) / busy
}
