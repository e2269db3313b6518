package router

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// nginxConf proxies every path to one upstream over kept-alive HTTP/1.1
// connections without buffering responses: the setup a reverse proxy in
// front of an LLM server uses, so the comparison with the router is fair.
// All state lives under the prefix directory; nothing touches /etc or
// /var/log.
const nginxConf = `daemon off;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream worker { server %[2]s; keepalive 256; }
	server {
		listen 127.0.0.1:%[3]d;
		location / {
			proxy_pass http://worker;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}
	}
}
`

// startNginx runs nginx as a reverse proxy to worker until the benchmark
// ends and returns its base URL; ok is false when nginx is not installed
// (`make bench-peers` installs it).
func startNginx(b *testing.B, worker string) (base string, ok bool) {
	b.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		return "", false
	}
	u, err := url.Parse(worker)
	if err != nil {
		b.Fatalf("worker url: %v", err)
	}
	port := freePort(b)
	dir := b.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, dir, u.Host, port), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf)
	// SIGTERM lets the master stop its workers; a killed master would leave
	// them serving.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		b.Fatalf("starting nginx: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() {
		cancel()
		<-exited
	})
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitServing(ctx, base+"/health", exited); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		b.Fatalf("nginx: %v\n%s", err, log)
	}
	return base, true
}

// freePort returns a loopback port that was free a moment ago.
func freePort(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitServing polls url until it answers 200, the process exits, or 10 s pass.
func waitServing(ctx context.Context, url string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probing %s: %w", url, err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before serving: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not serving %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}
