package simtest_test

import (
	"net/http"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

func TestStopAndRestartOnSamePort(t *testing.T) {
	t.Parallel()
	w := simtest.StartStoppable(t, sim.Options{})
	health := func() error {
		resp, err := http.Get(w.URL + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := health(); err != nil {
		t.Fatalf("fresh worker: %v", err)
	}
	w.Stop()
	if err := health(); err == nil {
		t.Fatal("stopped worker still answers")
	}
	w.Stop() // idempotent
	w.Restart()
	if err := health(); err != nil {
		t.Fatalf("restarted worker: %v", err)
	}
}
