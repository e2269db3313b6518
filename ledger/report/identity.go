package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/stale"
)

// identityOf describes where and how a row's trial ran.
func identityOf(t ledger.Trial) (Identity, error) {
	id := Identity{
		Topology: topology(t.Topology), Seed: t.Seed,
		SpecHash: t.SpecHash, EngineHash: t.EngineHash, RouterHash: t.RouterHash,
	}
	var err error
	if id.Target, id.Hardware, err = targetOf(t); err != nil {
		return Identity{}, err
	}
	router, err := stale.Identity(json.RawMessage(t.RouterConfig))
	if err != nil {
		return Identity{}, fmt.Errorf("trial %d: %w", t.ID, err)
	}
	if id.Router, err = flatten(router); err != nil {
		return Identity{}, fmt.Errorf("trial %d router config: %w", t.ID, err)
	}
	if id.Engine, err = flatten(t.EngineConfig); err != nil {
		return Identity{}, fmt.Errorf("trial %d engine config: %w", t.ID, err)
	}
	if id.Workload, err = flatten(t.Workload); err != nil {
		return Identity{}, fmt.Errorf("trial %d workload: %w", t.ID, err)
	}
	id.Policy = policy(id.Router)
	id.Rate = offeredRate(id.Workload)
	return id, nil
}

// targetOf reads the target kind and hardware label from the row's columns
// of those names when the ledger records them (older rows do not). It goes
// through the row's JSON form so that it needs no field that older ledgers
// lack.
func targetOf(t ledger.Trial) (target, hardware string, err error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", "", fmt.Errorf("trial %d: %w", t.ID, err)
	}
	var cols struct {
		Target   string `json:"target_kind"`
		Hardware string `json:"hardware"`
	}
	if err := json.Unmarshal(b, &cols); err != nil {
		return "", "", fmt.Errorf("trial %d: %w", t.ID, err)
	}
	return cols.Target, cols.Hardware, nil
}

func topology(t ledger.Topology) string {
	if t.Prefill > 0 || t.Decode > 0 {
		return fmt.Sprintf("%dP+%dD", t.Prefill, t.Decode)
	}
	if t.Replicas == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", t.Replicas)
}

// policy names the routing policy, or prefill/decode policies in PD mode.
func policy(router []Setting) string {
	if len(router) == 0 {
		return "no router"
	}
	v := map[string]string{}
	for _, s := range router {
		v[s.Key] = s.Value
	}
	if v["pd_disaggregation"] == "true" {
		return v["prefill_policy"] + "/" + v["decode_policy"]
	}
	return v["policy"]
}

// offeredRate is workload.arrival.request_rate when finite and positive.
func offeredRate(workload []Setting) float64 {
	for _, s := range workload {
		if s.Key == "arrival.request_rate" {
			r, err := strconv.ParseFloat(s.Value, 64)
			if err == nil && r > 0 && !math.IsInf(r, 0) {
				return r
			}
		}
	}
	return 0
}

// flatten turns a JSON document into dotted keys in sorted order: objects
// nest, anything else (lists, scalars) is one value in compact JSON, bare
// for strings. An empty document has no settings.
func flatten(doc []byte) ([]Setting, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	var out []Setting
	var walk func(prefix string, v any) error
	walk = func(prefix string, v any) error {
		if m, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				if err := walk(key, m[k]); err != nil {
					return err
				}
			}
			return nil
		}
		if prefix == "" {
			return nil // a bare scalar document (null) has no keys
		}
		if s, ok := v.(string); ok {
			out = append(out, Setting{Key: prefix, Value: s})
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out = append(out, Setting{Key: prefix, Value: string(b)})
		return nil
	}
	return out, walk("", v)
}

// markVaries flags the settings whose value is not the same on every row
// (absent counts as a value), so the page can show what tells rows apart.
func markVaries(rows []Row) {
	for _, field := range []func(*Identity) []Setting{
		func(i *Identity) []Setting { return i.Router },
		func(i *Identity) []Setting { return i.Engine },
		func(i *Identity) []Setting { return i.Workload },
	} {
		values := map[string]map[string]bool{}
		count := map[string]int{}
		for i := range rows {
			for _, s := range field(&rows[i].Identity) {
				if values[s.Key] == nil {
					values[s.Key] = map[string]bool{}
				}
				values[s.Key][s.Value] = true
				count[s.Key]++
			}
		}
		for i := range rows {
			for j, s := range field(&rows[i].Identity) {
				field(&rows[i].Identity)[j].Varies = len(values[s.Key]) > 1 || count[s.Key] < len(rows)
			}
		}
	}
}
