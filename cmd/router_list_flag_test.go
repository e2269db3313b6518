package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router"
)

// --kv-events given on the command line replaces the file's streams (the
// first use, then it appends); without it the file's stay.
func TestRouterKVEventsFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "router.yaml")
	yaml := "policy: precise_prefix\nworker_urls: [\"http://127.0.0.1:1\", \"http://127.0.0.1:2\"]\n" +
		"kv_events: [{worker: \"http://127.0.0.1:1\", endpoint: \"tcp://127.0.0.1:9\"}]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) router.Config {
		t.Helper()
		flagCfg := router.DefaultConfig()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		bindRouterFlags(fs, &flagCfg)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := resolveRouterConfig(fs, flagCfg, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := parse().KVEvents; len(got) != 1 || got[0].Endpoint != "tcp://127.0.0.1:9" {
		t.Errorf("file only: %+v", got)
	}
	got := parse("--kv-events", "http://127.0.0.1:1=tcp://127.0.0.1:5,tcp://127.0.0.1:6",
		"--kv-events", "http://127.0.0.1:2=tcp://127.0.0.1:7").KVEvents
	want := []router.KVEventsSource{
		{Worker: "http://127.0.0.1:1", Endpoint: "tcp://127.0.0.1:5", ReplayEndpoint: "tcp://127.0.0.1:6"},
		{Worker: "http://127.0.0.1:2", Endpoint: "tcp://127.0.0.1:7"},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("flags over file: %+v, want %+v", got, want)
	}
}

func TestRouterScorerFlag(t *testing.T) {
	c := router.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	bindRouterFlags(fs, &c)
	if err := fs.Parse([]string{"--policy", "weighted", "--scorer", "precise_prefix=2", "--scorer", "load=0.5"}); err != nil {
		t.Fatal(err)
	}
	if len(c.Scorers) != 2 || c.Scorers[0] != (router.Scorer{Name: "precise_prefix", Weight: 2}) || c.Scorers[1] != (router.Scorer{Name: "load", Weight: 0.5}) {
		t.Errorf("scorers %+v", c.Scorers)
	}
	if err := fs.Parse([]string{"--scorer", "load"}); err == nil {
		t.Error("--scorer without a weight was accepted")
	}
}
