package report

import "github.com/autoinfer/autoinfer/ledger"

// Report is everything the page shows, embedded in it as JSON. Field names
// are the JSON keys the page's script reads.
type Report struct {
	Title     string `json:"title"`
	Ledger    string `json:"ledger"`
	Selection string `json:"selection"`
	Generated string `json:"generated,omitempty"`
	// Notes say what the page leaves out and why (rows past a limit,
	// comparisons not computed).
	Notes []string `json:"notes"`

	Metrics []MetricInfo `json:"metrics"`
	// DefaultX and DefaultY are the Pareto axes the page opens with, as
	// `ledger pareto` defaults.
	DefaultX string `json:"default_x"`
	DefaultY string `json:"default_y"`

	Rows   []Row      `json:"rows"`
	CDFs   []TrialCDF `json:"cdfs"`
	Curves Curves     `json:"curves"`
	Pairs  []Pair     `json:"pairs"`
	// PairsNote explains an empty or partial comparison section.
	PairsNote string        `json:"pairs_note,omitempty"`
	Bootstrap BootstrapInfo `json:"bootstrap"`
	// Routes are the selected ok rows whose requests carry route
	// receipts; the page shows them as "Route receipts".
	Routes []RouteRow `json:"routes,omitempty"`
	// Predictions are the selected real-time rows that confirm a virtual
	// prediction; the page shows them as "Predicted vs measured".
	Predictions []Prediction `json:"predictions,omitempty"`
	// Drift is, per profile that predicted a selected row, its prediction
	// error over time and the metrics whose recent median exceeds the
	// error it states; the page shows it as "Prediction drift".
	Drift []ledger.Drift `json:"drift,omitempty"`
}

// MetricInfo is one metric the Pareto axes can take.
type MetricInfo struct {
	Name      string `json:"name"`
	Direction string `json:"direction"` // "min" or "max"
}

// Row is one ledger row: status, every metric, and its identity.
type Row struct {
	ID          int64              `json:"id"`
	Name        string             `json:"name"`
	SweepID     string             `json:"sweep_id"`
	Status      string             `json:"status"`
	Stale       bool               `json:"stale"`
	StaleReason string             `json:"stale_reason,omitempty"`
	FailureKind string             `json:"failure_kind,omitempty"`
	Failure     string             `json:"failure,omitempty"`
	StartedAt   string             `json:"started_at"`
	Requests    int                `json:"requests"` // per-request records in the ledger
	Metrics     map[string]float64 `json:"metrics"`
	Identity    Identity           `json:"identity"`
}

// Identity is what makes a row the trial it is: where it ran, on what, and
// with which router, engine and workload settings.
type Identity struct {
	// Target and Hardware are read from the row's target_kind and hardware
	// columns where the ledger has them; empty means not recorded.
	Target   string `json:"target,omitempty"`
	Hardware string `json:"hardware,omitempty"`
	Topology string `json:"topology"`
	Policy   string `json:"policy"`
	// Router is the router config without its addresses (ports, worker
	// URLs), flattened to dotted keys; empty without a router.
	Router   []Setting `json:"router"`
	Engine   []Setting `json:"engine"`
	Workload []Setting `json:"workload"`
	// Rate is the workload's offered request rate (req/s); 0 when it has
	// none (everything at once, or closed loop).
	Rate       float64 `json:"rate"`
	Seed       int64   `json:"seed"`
	SpecHash   string  `json:"spec_hash"`
	EngineHash string  `json:"engine_hash"`
	RouterHash string  `json:"router_hash"`
}

// Setting is one flattened config key. Varies is set when the report's rows
// do not all have the same value, so the page can point at what differs.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Varies bool   `json:"varies,omitempty"`
}

// TrialCDF is one trial's empirical latency distributions: points (x ms,
// cumulative share) in x order, and the sample sizes they come from.
type TrialCDF struct {
	ID   int64          `json:"id"`
	N    map[string]int `json:"n"`
	TTFT [][2]float64   `json:"ttft"`
	TPOT [][2]float64   `json:"tpot"`
	E2EL [][2]float64   `json:"e2el"`
}

// Curves are the sweep curves: one series per configuration, its points
// the rows that differ only in offered rate.
type Curves struct {
	// SLO is the goodput definition, nil when none is known; NoSLO then
	// says why (the rows' specs set none, or different ones).
	SLO        *SLOInfo `json:"slo"`
	NoSLO      string   `json:"no_slo,omitempty"`
	Attainment float64  `json:"attainment"`
	Series     []Series `json:"series"`
	// Unplaced are ok rows with no finite offered rate, so no x position.
	Unplaced []int64 `json:"unplaced"`
}

// SLOInfo is the goodput definition the curves use.
type SLOInfo struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	TPOTMs float64 `json:"tpot_ms,omitempty"`
	E2ELMs float64 `json:"e2el_ms,omitempty"`
	Source string  `json:"source"`
}

// Series is one configuration across offered rates.
type Series struct {
	Label  string        `json:"label"`
	Points []SeriesPoint `json:"points"`
	// Knee is the id of the highest-rate row meeting the SLOs; 0 when
	// none does or no SLO is known. KneeNote says which, and whether the
	// knee may lie above the highest rate tried.
	Knee     int64  `json:"knee"`
	KneeNote string `json:"knee_note"`
}

// SeriesPoint is one row on a curve, in rate order. Goodput and Attainment
// are computed from the row's requests under the report's SLO; nil when
// no SLO is known or the row has no request records.
type SeriesPoint struct {
	ID         int64    `json:"id"`
	Rate       float64  `json:"rate"`
	Goodput    *float64 `json:"goodput"`
	Attainment *float64 `json:"attainment"`
	MeetsSLO   bool     `json:"meets_slo"`
}

// Pair is the bootstrap comparison of two trials, from ledger.Compare.
type Pair struct {
	A         int64                `json:"a"`
	B         int64                `json:"b"`
	NA        int                  `json:"n_a"`
	NB        int                  `json:"n_b"`
	Intervals []ledger.Interval    `json:"intervals"`
	Metrics   []ledger.MetricDelta `json:"metrics"`
	// Controls are each side's gain over its zero-reuse control arms,
	// for sides that have them (ledger.ControlGain).
	Controls []ledger.ControlGain `json:"controls,omitempty"`
}

// BootstrapInfo is how the comparisons were computed.
type BootstrapInfo struct {
	Resamples  int     `json:"resamples"`
	Confidence float64 `json:"confidence"`
	Seed       uint64  `json:"seed"`
}
