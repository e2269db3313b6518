package trials

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/target/static"
)

// The target section's JSON is part of the spec hash, which the ledger
// compares across versions: it stays one object, kind first, then the
// kind's own keys in their declaration order, unset ones left out.
func TestTargetJSONIsStable(t *testing.T) {
	for _, tc := range []struct {
		target Target
		want   string
	}{
		{Target{Kind: "sim", Options: &simtarget.Options{Source: simtarget.Source{Profile: "fast"}}}, `{"kind":"sim","profile":"fast"}`},
		{Target{Kind: "static", Options: &static.Options{Workers: []string{"http://a:1"}, HealthTimeout: time.Second, HealthPath: "/health"}},
			`{"kind":"static","workers":["http://a:1"],"health_timeout":1000000000,"health_path":"/health"}`},
		{Target{Kind: "process", Options: &process.Options{Command: "x {port}", Host: "127.0.0.1", Env: map[string]string{"B": "2", "A": "1"}, HealthPath: "/h"}},
			`{"kind":"process","command":"x {port}","host":"127.0.0.1","env":{"A":"1","B":"2"},"health_path":"/h"}`},
		{Target{Kind: "sim", Options: &simtarget.Options{}}, `{"kind":"sim"}`},
		{Target{Kind: "nope"}, `{"kind":"nope"}`},
	} {
		b, err := json.Marshal(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
}

// Kinds come from the registry: an unknown kind names the registered ones,
// and a key of another kind names the kind it belongs to.
func TestTargetKindErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, path, msg string }{
		{"unknown kind", minimal + "target: {kind: docker}\n", "target.kind", `must be one of sim, static, process, kubernetes (got "docker")`},
		{"key of two other kinds", minimal + "target: {health_path: /h}\n", "target.health_path", "only for kinds static, process and kubernetes (kind is sim)"},
		{"hardware required for real servers", minimal + "target: {kind: static, workers: [http://a:1, http://b:1]}\n", "target.hardware", "required for kind static"},
		{"hardware is the profile for sim", minimal + "target: {kind: sim, hardware: x}\n", "target.hardware", "not for kind sim"},
		{"unknown key", minimal + "target: {kind: static, worker: [http://a:1]}\n", "target.worker", `unknown key; did you mean "workers"?`},
		{"sim reference for real servers", minimal + "target: {kind: static, workers: [http://a:1, http://b:1]}\ngate: {reference: sim}\n",
			"gate.reference", "sim needs simulated workers"},
		{"static duplicate URLs", minimal + "target: {kind: static, workers: [http://a:1, http://a:1]}\n", "target.workers", "must not list the same URL twice"},
		{"process env placeholder", minimal + "target: {kind: process, command: 'x --port {port}', env: {A: '{nope}'}}\n", "target.env.A", "unknown placeholder {nope}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := specErr(t, tc.spec)
			for _, f := range fields {
				if f.Path == tc.path && strings.Contains(f.Msg, tc.msg) && f.Line > 0 {
					return
				}
			}
			t.Errorf("no error %s: …%s… with a line; got %v", tc.path, tc.msg, fields)
		})
	}
}
