package adapter

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// A trial whose router requires a key runs end to end: the driver, the
// gate's deployment prompts, the load drain and the metrics scrape all
// carry the key, and the key appears in no ledger row or file the trial
// wrote. (Not parallel: the key is in this process's environment.)
func TestKeyedRouterTrialRunsAndStoresNoKey(t *testing.T) {
	const key = "sk-trial-9f2c41e7d0b3"
	t.Setenv("AUTOINFER_TEST_ROUTER_KEY", key)
	dir := t.TempDir()
	led, err := ledger.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Ledger: led, WorkDir: filepath.Join(dir, "work"), ScheduleDelayLimit: noOverload, EngineLagRatioLimit: noEngineLagBound,
		Binary: buildAutoinfer(t)}) // launch: process runs `autoinfer router serve`
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, launch := range []string{"embedded", "process"} {
		spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "router: {policy: round_robin}",
			"router: {policy: round_robin, launch: "+launch+", api_key_env: AUTOINFER_TEST_ROUTER_KEY}", 1)
		out := runOK(t, r, parseSpec(t, spec)[0])
		row, err := led.Get(context.Background(), out.RowID)
		if err != nil {
			t.Fatal(err)
		}
		if out.Gate == nil || row.RouterRequests == 0 || len(row.FinalLoads) != 2 {
			t.Errorf("%s: gate %v, router requests %d, final loads %v: the gate, the scrape and the drain must pass the key",
				launch, out.Gate, row.RouterRequests, row.FinalLoads)
		}
		requireZeroLoads(t, row.FinalLoads)
		if !strings.Contains(string(row.RouterConfig), "AUTOINFER_TEST_ROUTER_KEY") {
			t.Errorf("%s: the row's router config does not name the key's variable: %s", launch, row.RouterConfig)
		}
	}
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
	// Every file under dir: the ledger (and its WAL), the router's config
	// and log.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(key)) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The key goes to the router's origin and nowhere else.
func TestRouterClientSendsKeyToRouterOnly(t *testing.T) {
	seen := map[string]string{}
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen[name] = r.Header.Get("Authorization") })
	}
	router, other := httptest.NewServer(handler("router")), httptest.NewServer(handler("other"))
	defer router.Close()
	defer other.Close()
	c, err := routerClient(router.Client(), router.URL, "k1")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{router.URL + "/metrics", other.URL + "/v1/completions"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if seen["router"] != "Bearer k1" || seen["other"] != "" {
		t.Errorf("Authorization seen: %q", seen)
	}
}
