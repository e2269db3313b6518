package ledger

import (
	"reflect"

	"github.com/autoinfer/autoinfer/ledger/metric"
)

// Direction says which way a metric improves (the catalogue's).
type Direction = metric.Direction

// Directions.
const (
	Minimize = metric.Minimize
	Maximize = metric.Maximize
)

// Metric is a catalogued figure; every one is a numeric column of the
// trials table, usable in pareto, compare and --bound.
type Metric = metric.Metric

// MetricList lists every metric, from the catalogue (package metric).
func MetricList() []Metric { return metric.All() }

// LookupMetric finds a stored metric by name; an unknown name is an error
// that lists the valid ones.
func LookupMetric(name string) (Metric, error) { return metric.Lookup(name) }

// Value returns the row's value of a metric (its column of that name) and
// whether the row has such a column.
func (t Trial) Value(name string) (float64, bool) {
	vals := map[string]float64{}
	numericFields(reflect.ValueOf(t), vals)
	v, ok := vals[name]
	return v, ok
}

// Values are the row's figures by catalogue name, as checks read them. A
// figure the trial did not measure is absent, not 0: the gate's without a
// quality gate, the router's without a router.
func (t Trial) Values() map[string]float64 {
	cols := map[string]float64{}
	numericFields(reflect.ValueOf(t), cols)
	out := map[string]float64{}
	for _, m := range metric.All() {
		if v, ok := cols[m.Name]; ok {
			out[m.Name] = v
		}
	}
	if t.GatePassed == nil {
		delete(out, "gate_kl_mean")
		delete(out, "gate_kl_max")
	}
	if t.RouterMetricsURL == "" {
		delete(out, "load_balancing_events")
	}
	return out
}

// numericFields collects every numeric db column of a struct value; a nil
// pointer (a NULL column) is left out.
func numericFields(v reflect.Value, out map[string]float64) {
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			numericFields(fv, out)
			continue
		}
		name := f.Tag.Get("db")
		if name == "" || name == "-" {
			continue
		}
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		switch {
		case fv.CanInt():
			out[name] = float64(fv.Int())
		case fv.CanFloat():
			out[name] = fv.Float()
		}
	}
}
