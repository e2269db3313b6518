package proxybench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router"
)

// roleEnv makes the test binary play one process of the benchmark instead
// of running tests; the role's arguments follow in roleArgsEnv.
const (
	roleEnv     = "AUTOINFER_PROXYBENCH_ROLE"
	roleArgsEnv = "AUTOINFER_PROXYBENCH_ARGS"
	// profileEnv, when set, makes the router process write a CPU profile
	// there (go tool pprof), to see where its time per request goes.
	profileEnv = "AUTOINFER_PROXYBENCH_CPUPROFILE"
	// allocsEnv, when set, makes the router process write an allocation
	// profile there when it stops (go tool pprof -sample_index=alloc_objects).
	allocsEnv = "AUTOINFER_PROXYBENCH_ALLOCPROFILE"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := playRole(role, splitArgs(os.Getenv(roleArgsEnv))); err != nil {
			fmt.Fprintln(os.Stderr, role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func splitArgs(s string) []string {
	var out []string
	for _, f := range bytes.Fields([]byte(s)) {
		out = append(out, string(f))
	}
	return out
}

// playRole runs one role until SIGTERM (servers) or until done (loadgen).
func playRole(role string, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	switch role {
	case "upstream": // addr
		return serve(ctx, args[0], upstreamHandler())
	case "router": // addr upstream policy
		if path := os.Getenv(profileEnv); path != "" {
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		if path := os.Getenv(allocsEnv); path != "" {
			defer func() {
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("allocs").WriteTo(f, 0)
					_ = f.Close()
				}
			}()
		}
		cfg := router.DefaultConfig()
		cfg.WorkerURLs, cfg.Policy = []string{args[1]}, args[2]
		r, err := router.New(cfg)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", args[0])
		if err != nil {
			return err
		}
		return r.Serve(ctx, ln)
	case "reverseproxy": // addr upstream
		u, err := url.Parse(args[1])
		if err != nil {
			return err
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		// text/event-stream responses are flushed event by event by default.
		rp.Transport = &http.Transport{Proxy: nil, MaxIdleConns: 4096, MaxIdleConnsPerHost: 1024,
			IdleConnTimeout: 90 * time.Second, DisableCompression: true}
		return serve(ctx, args[0], bufferBody(rp))
	case "loadgen": // url bodyfile concurrency seconds
		return loadgen(ctx, args)
	}
	return fmt.Errorf("unknown role %q", role)
}

// bufferBody reads the request body before proxying, as the router and
// nginx (proxy_request_buffering) do. Streaming it instead cuts some
// streamed answers: net/http's server closes the inbound body once the
// response headers are written, and the transport's final read of a
// fully sent body then fails and tears down the upstream connection.
func bufferBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		h.ServeHTTP(w, r)
	})
}

func serve(ctx context.Context, addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return srv.Close()
	}
}

// Upstream answers. completionJSON is a non-streaming completion of one
// token; a streaming request gets its first event at once and the rest
// after streamPause, so a proxy that buffers the stream shows up in time to
// first byte.
const (
	completionJSON = `{"id":"cmpl-bench","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" ok","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`
	streamEvent    = `data: {"id":"cmpl-bench","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" ok","logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	streamDone     = "data: [DONE]\n\n"
	streamPause    = 20 * time.Millisecond
)

func upstreamHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(completionJSON)))
			_, _ = io.WriteString(w, completionJSON)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, streamEvent)
		http.NewResponseController(w).Flush()
		t := time.NewTimer(streamPause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, streamEvent+streamDone)
	})
	return mux
}

// loadgen is the Go load generator used when wrk is not installed: c
// clients in a closed loop for the given seconds. It prints
// "RESULT requests errors seconds".
func loadgen(ctx context.Context, args []string) error {
	target, bodyFile := args[0], args[1]
	c, err := strconv.Atoi(args[2])
	if err != nil {
		return fmt.Errorf("concurrency: %w", err)
	}
	secs, err := strconv.ParseFloat(args[3], 64)
	if err != nil {
		return fmt.Errorf("seconds: %w", err)
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: c, DisableCompression: true}}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs*float64(time.Second)))
	defer cancel()
	var ok, bad atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						bad.Add(1)
					}
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case err == nil && resp.StatusCode == http.StatusOK:
					ok.Add(1)
				case ctx.Err() == nil:
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("RESULT %d %d %f\n", ok.Load(), bad.Load(), time.Since(start).Seconds())
	return nil
}
