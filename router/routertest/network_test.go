package routertest_test

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/router/routertest"
)

func TestNetworkDialAndListen(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := routertest.NewNetwork()
		if _, err := n.DialContext(t.Context(), "tcp", "nobody.pipe:80"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial without a listener: %v, want ECONNREFUSED", err)
		}
		ln, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Listen(ln.Addr().String()); !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("second listen on %s: %v, want EADDRINUSE", ln.Addr(), err)
		}
		accepted := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				defer c.Close()
				buf := make([]byte, 2)
				if _, err = c.Read(buf); err == nil && string(buf) != "hi" {
					err = errors.New("server read " + string(buf))
				}
			}
			accepted <- err
		}()
		c, err := n.DialContext(t.Context(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		if err := <-accepted; err != nil {
			t.Fatal(err)
		}
		c.Close()

		// A dial nobody accepts waits for its context, on the fake clock.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if _, err := n.DialContext(ctx, "tcp", ln.Addr().String()); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("unaccepted dial: %v after %v, want a deadline error after 1s", err, time.Since(start))
		}

		// A closed listener refuses, and its address can be listened on again.
		ln.Close()
		if _, err := ln.Accept(); err == nil {
			t.Fatal("Accept on a closed listener succeeded")
		}
		if _, err := n.DialContext(t.Context(), "tcp", ln.Addr().String()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial after close: %v, want ECONNREFUSED", err)
		}
		again, err := n.Listen(ln.Addr().String())
		if err != nil {
			t.Fatalf("listen again after close: %v", err)
		}
		again.Close()
	})
}

// A fake worker over the network: held requests wait on the fake clock until
// released or abandoned, and the client's timeout fires exactly when due.
func TestWorkerOverNetwork(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := routertest.NewNetwork()
		ln, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		w := routertest.StartWorkerOn(t, ln)
		c := n.Client(t)

		held := c.Go(t.Context(), http.MethodPost, w.URL+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
		synctest.Wait()
		select {
		case res := <-held:
			t.Fatalf("held request answered before Release: %d", res.Status)
		default:
		}
		w.Release()
		if res := <-held; res.Status != 200 || w.LastHeader().Get("X-Fake-Block") != "1" {
			t.Fatalf("released request: %d %v %s", res.Status, res.Err, res.Body)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		defer cancel()
		start := time.Now()
		if res := <-c.Go(ctx, http.MethodPost, w.URL+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "1000"); !errors.Is(res.Err, context.DeadlineExceeded) {
			t.Fatalf("sleeping worker with a 250ms client timeout: %d %v", res.Status, res.Err)
		}
		if took := time.Since(start); took != 250*time.Millisecond {
			t.Errorf("client gave up after %v, want 250ms", took)
		}
		synctest.Wait()
		if n := w.Cancelled.Load(); n != 1 {
			t.Errorf("worker saw %d cancellations, want 1", n)
		}

		w.FailStatus.Store(503)
		if res := c.Post(w.URL+"/v1/completions", `{"prompt":"x"}`); res.Status != 503 || res.ErrorType() != "fake" {
			t.Errorf("failing worker: %d %s", res.Status, res.Body)
		}
		if got := w.Requests.Load(); got != 3 {
			t.Errorf("worker counted %d requests, want 3", got)
		}
	})
}

func TestErrorType(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"error":{"message":"m","type":"queue_full","param":null,"code":429}}`: "queue_full",
		`{"choices":[]}`: "",
		`not json`:       "",
		`{"error":null}`: "",
	} {
		if got := routertest.ErrorType(body); got != want {
			t.Errorf("ErrorType(%s) = %q, want %q", body, got, want)
		}
	}
}
