package stale

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	rr     = `{"policy":"round_robin","worker_urls":["http://127.0.0.1:4001","http://127.0.0.1:4002"],"port":4000,"retry":{"max_retries":5}}`
	ca     = `{"policy":"cache_aware","cache_threshold":0.3,"worker_urls":["http://127.0.0.1:5001","http://127.0.0.1:5002"],"port":5000,"retry":{"max_retries":5}}`
	caMore = `{"policy":"cache_aware","cache_threshold":0.3,"retry":{"max_retries":3}}`
)

func TestDiff(t *testing.T) {
	cases := []struct {
		name     string
		old, new string
		want     string
	}{
		{"identical", rr, rr, ""},
		{"only addresses differ", rr, `{"retry":{"max_retries":5},"policy":"round_robin","host":"0.0.0.0","worker_urls":["http://x"],"port":1}`, ""},
		{"policy and a new key", rr, ca, "router.cache_threshold: (unset)→0.3; router.policy: round_robin→cache_aware"},
		{"nested key by dotted path", ca, caMore, "router.retry.max_retries: 5→3"},
		{"removed key", caMore, `{"policy":"cache_aware","retry":{"max_retries":3}}`, "router.cache_threshold: 0.3→(unset)"},
		{"list value compared whole", `{"policy":"x","extra":[1,2]}`, `{"policy":"x","extra":[1,3]}`, "router.extra: [1,2]→[1,3]"},
		{"object replaced by scalar", `{"retry":{"max_retries":1}}`, `{"retry":false}`, `router.retry: {"max_retries":1}→false`},
		{"numbers compared by value", `{"cache_threshold":0.30,"max_tree_size":1e3}`, `{"cache_threshold":0.3,"max_tree_size":1000}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			changes, err := Diff(json.RawMessage(c.old), json.RawMessage(c.new))
			if err != nil {
				t.Fatal(err)
			}
			if got := Reason(changes); got != c.want {
				t.Errorf("reason = %q\nwant     %q", got, c.want)
			}
		})
	}
	if _, err := Diff(json.RawMessage(`{"policy":`), json.RawMessage(rr)); err == nil {
		t.Error("malformed router config diffed without error")
	}
}

func TestMarks(t *testing.T) {
	row := func(id int64, status, engine, router string, stale bool) Row {
		return Row{ID: id, Status: status, Context: engine, RouterConfig: json.RawMessage(router), Stale: stale}
	}
	cases := []struct {
		name    string
		current Row
		earlier []Row
		want    []Mark
	}{
		{"policy change marks the earlier row",
			row(2, "ok", "e1", ca, false), []Row{row(1, "ok", "e1", rr, false)},
			[]Mark{{1, "router.cache_threshold: (unset)→0.3; router.policy: round_robin→cache_aware"}}},
		{"identical config marks nothing",
			row(3, "ok", "e1", ca, false), []Row{row(2, "ok", "e1", ca, false)}, nil},
		{"identical apart from addresses marks nothing",
			row(3, "ok", "e1", `{"policy":"round_robin","retry":{"max_retries":5},"port":9}`, false), []Row{row(1, "ok", "e1", rr, false)}, nil},
		{"already stale rows keep their first reason",
			row(3, "ok", "e1", ca, false), []Row{row(1, "ok", "e1", rr, true), row(2, "ok", "e1", ca, false)}, nil},
		{"unknown context marks nothing",
			row(2, "ok", "", ca, false), []Row{row(1, "ok", "", rr, false)}, nil},
		{"PD rows: a collocated-only setting was in effect for neither",
			Row{ID: 2, Status: "ok", Context: "e1", PD: true, RouterConfig: json.RawMessage(`{"policy":"least_loaded","prefill_policy":"cache_aware"}`)},
			[]Row{{ID: 1, Status: "ok", Context: "e1", PD: true, RouterConfig: json.RawMessage(`{"policy":"cache_aware","prefill_policy":"cache_aware"}`)}}, nil},
		{"PD rows: one reason per effective setting",
			Row{ID: 2, Status: "ok", Context: "e1", PD: true, RouterConfig: json.RawMessage(`{"policy":"least_loaded","prefill_policy":"round_robin"}`)},
			[]Row{{ID: 1, Status: "ok", Context: "e1", PD: true, RouterConfig: json.RawMessage(`{"policy":"cache_aware","prefill_policy":"cache_aware"}`)}},
			[]Mark{{1, "router.prefill_policy: cache_aware→round_robin"}}},
		{"collocated rows: a PD-only setting was in effect for neither",
			row(2, "ok", "e1", `{"policy":"round_robin","kv_connector":"nixl"}`, false), []Row{row(1, "ok", "e1", `{"policy":"round_robin"}`, false)}, nil},
		{"another comparison context is untouched",
			row(2, "ok", "e2", ca, false), []Row{row(1, "ok", "e1", rr, false)}, nil},
		{"failed and aborted trials mark nothing",
			row(2, "failed", "e1", ca, false), []Row{row(1, "ok", "e1", rr, false)}, nil},
		{"a trial without a router marks nothing",
			row(2, "ok", "e1", "", false), []Row{row(1, "ok", "e1", rr, false)}, nil},
		{"rows without a router are never stale",
			row(2, "ok", "e1", ca, false), []Row{row(1, "ok", "e1", "null", false), row(4, "ok", "e1", "{}", false)}, nil},
		{"rows of the same sweep never mark each other",
			Row{ID: 2, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(ca), SweepID: "s1"},
			[]Row{{ID: 1, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(rr), SweepID: "s1"}}, nil},
		{"replicates of one repeated trial never mark each other",
			Row{ID: 2, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(ca), ReplicateGroup: "g1"},
			[]Row{{ID: 1, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(rr), ReplicateGroup: "g1"}}, nil},
		{"a row of another replicate group is marked",
			Row{ID: 2, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(ca), ReplicateGroup: "g2"},
			[]Row{{ID: 1, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(rr), ReplicateGroup: "g1"}},
			[]Mark{{1, "router.cache_threshold: (unset)→0.3; router.policy: round_robin→cache_aware"}}},
		{"a row of another sweep is marked",
			Row{ID: 2, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(ca), SweepID: "s2"},
			[]Row{{ID: 1, Status: "ok", Context: "e1", RouterConfig: json.RawMessage(rr), SweepID: "s1"}},
			[]Mark{{1, "router.cache_threshold: (unset)→0.3; router.policy: round_robin→cache_aware"}}},
		{"earlier failed rows are marked too, several at once",
			row(5, "ok", "e1", caMore, false), []Row{row(1, "failed", "e1", ca, false), row(2, "ok", "e1", ca, false), row(5, "ok", "e1", ca, false)},
			[]Mark{{1, "router.retry.max_retries: 5→3"}, {2, "router.retry.max_retries: 5→3"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Marks(c.current, c.earlier)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Marks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdentityIgnoresAddressesAndKeyOrder(t *testing.T) {
	a, err := Identity(json.RawMessage(rr))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Identity(json.RawMessage(`{"retry":{"max_retries":5},"port":1,"policy":"round_robin"}`))
	c, _ := Identity(json.RawMessage(ca))
	if string(a) != string(b) || string(a) == string(c) {
		t.Errorf("identities: %s / %s / %s", a, b, c)
	}
	if want := `{"policy":"round_robin","retry":{"max_retries":5}}`; string(a) != want {
		t.Errorf("identity = %s, want %s", a, want)
	}
	if id, _ := Identity(json.RawMessage(" null ")); id != nil {
		t.Errorf("no-router identity = %s", id)
	}
}

func TestCanonical(t *testing.T) {
	got, err := Canonical(json.RawMessage(`{ "b": 1.50, "a": {"d": [1, 2], "c": null} }`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"c":null,"d":[1,2]},"b":1.5}`; string(got) != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
	if _, err := Canonical(json.RawMessage(`{`)); err == nil {
		t.Error("malformed JSON canonicalised without error")
	}
}
