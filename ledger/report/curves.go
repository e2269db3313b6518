package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
)

// rateKey is the workload setting a sweep curve puts on its x axis.
const rateKey = "arrival.request_rate"

// curveRow is what curves needs of one ok row.
type curveRow struct {
	row  Row
	reqs []ledger.Request
}

// buildCurves groups ok rows into series that are equal in everything but
// the offered rate (target, hardware, topology, router, engine and the
// rest of the workload), computes each point's goodput under the SLO, and
// marks each series' knee: the highest rate whose goodput meets the SLOs,
// i.e. at least `attainment` of its requests meet every bound.
func buildCurves(rows []curveRow, slo metrics.SLO, sloSource string, attainment float64) Curves {
	c := Curves{Attainment: attainment, Series: []Series{}, Unplaced: []int64{}}
	if slo.Set() {
		c.SLO = &SLOInfo{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2ELMs: slo.E2ELMs, Source: sloSource}
	}
	index := map[string]int{}
	for _, r := range rows {
		id := r.row.Identity
		if id.Rate == 0 {
			c.Unplaced = append(c.Unplaced, r.row.ID)
			continue
		}
		key := seriesKey(id)
		i, ok := index[key]
		if !ok {
			i = len(c.Series)
			index[key] = i
			c.Series = append(c.Series, Series{Label: seriesLabel(r.row.Name)})
		}
		p := SeriesPoint{ID: r.row.ID, Rate: id.Rate}
		if slo.Set() && len(r.reqs) > 0 {
			good, att := goodput(r.reqs, r.row.Metrics["duration"], slo)
			p.Goodput, p.Attainment = &good, &att
			p.MeetsSLO = att >= attainment
		}
		c.Series[i].Points = append(c.Series[i].Points, p)
	}
	labels := map[string]int{}
	for _, s := range c.Series {
		labels[s.Label]++
	}
	for i := range c.Series {
		s := &c.Series[i]
		slices.SortFunc(s.Points, func(a, b SeriesPoint) int { return cmp.Or(cmp.Compare(a.Rate, b.Rate), cmp.Compare(a.ID, b.ID)) })
		if labels[s.Label] > 1 {
			s.Label = fmt.Sprintf("%s (#%d)", s.Label, s.Points[0].ID)
		}
		s.Knee, s.KneeNote = knee(s.Points, c.SLO, attainment)
	}
	return c
}

// seriesKey is the identity without the offered rate.
func seriesKey(id Identity) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s\x00", id.Target, id.Hardware, id.Topology)
	for _, group := range []struct {
		name     string
		settings []Setting
	}{{"router", id.Router}, {"engine", id.Engine}, {"workload", id.Workload}} {
		for _, s := range group.settings {
			if group.name == "workload" && s.Key == rateKey {
				continue
			}
			fmt.Fprintf(&b, "%s.%s=%s\x00", group.name, s.Key, s.Value)
		}
	}
	return b.String()
}

// seriesLabel is a matrix trial's name without its rate setting:
// "quickstart/router.policy=cache_aware,workload.arrival.request_rate=20"
// becomes "quickstart/router.policy=cache_aware".
func seriesLabel(name string) string {
	base, settings, ok := strings.Cut(name, "/")
	if !ok {
		return name
	}
	var keep []string
	for _, s := range strings.Split(settings, ",") {
		if !strings.HasPrefix(s, "workload."+rateKey+"=") {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return base
	}
	return base + "/" + strings.Join(keep, ",")
}

// goodput computes requests/s meeting every SLO bound over the row's
// measured duration with the driver's own Summarize (the definition the
// row's request_goodput was computed with), and the share of the row's
// requests that met them (failed requests count as missing).
func goodput(reqs []ledger.Request, durationS float64, slo metrics.SLO) (goodput, attainment float64) {
	recs := make([]metrics.RequestRecord, len(reqs))
	for i, r := range reqs {
		recs[i] = metrics.RequestRecord{
			Index: r.Index, Sent: true, SendMs: r.ActualSendMs, IntendedMs: r.IntendedSendMs,
			TTFTMs: r.TTFTMs, TPOTMs: r.TPOTMs, E2ELMs: r.E2ELMs, ITLMs: r.ITLs,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Success: r.Status == ledger.RequestOK,
		}
	}
	// Rounded, not truncated: the seconds came from a time.Duration, and
	// truncating their product with 1e9 loses a nanosecond for about one
	// duration in sixty, which moves the quotient off the row's own figure.
	d := time.Duration(math.Round(durationS * float64(time.Second)))
	s := metrics.Summarize(recs, metrics.Params{Duration: d, Goodput: slo})
	if s.RequestGoodput == nil {
		return 0, 0 // no duration recorded: nothing per second
	}
	good := math.Round(*s.RequestGoodput * s.Duration)
	return *s.RequestGoodput, good / float64(len(reqs))
}

// knee picks the highest rate meeting the SLOs and says what it means.
func knee(pts []SeriesPoint, slo *SLOInfo, attainment float64) (int64, string) {
	if slo == nil {
		return 0, "no SLO known: no knee marked"
	}
	best := -1
	for i, p := range pts {
		if p.MeetsSLO {
			best = i
		}
	}
	share := fmt.Sprintf("%g%% of requests within the SLOs", attainment*100)
	switch {
	case best < 0:
		return 0, fmt.Sprintf("no rate tried meets the SLOs (%s): the knee lies below %s req/s", share, num(pts[0].Rate))
	case best == len(pts)-1:
		return pts[best].ID, fmt.Sprintf("knee at %s req/s, the highest rate tried (%s): it may lie higher", num(pts[best].Rate), share)
	}
	return pts[best].ID, fmt.Sprintf("knee at %s req/s (%s); the next rate tried, %s req/s, misses", num(pts[best].Rate), share, num(pts[best+1].Rate))
}

func num(v float64) string { return fmt.Sprintf("%.4g", v) }
