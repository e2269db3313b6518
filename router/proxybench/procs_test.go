package proxybench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is one measured process (with its children, for nginx's workers).
type proc struct {
	name string
	base string // http://127.0.0.1:port
	pid  int
	log  *bytes.Buffer
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs cmd until the benchmark ends (SIGTERM, then a kill after 5 s)
// and waits until base/health answers 200 (through a proxy: the upstream's).
func start(tb testing.TB, name, base string, cmd *exec.Cmd) *proc {
	tb.Helper()
	p := &proc{name: name, base: base, log: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", name, err)
	}
	p.pid = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Cancel()
		<-exited
	})
	if err := waitReady(base+"/health", exited); err != nil {
		tb.Fatalf("%s: %v\n%s", name, err, p.log)
	}
	return p
}

// self runs the test binary in a role (see TestMain).
func self(ctx context.Context, tb testing.TB, role string, args ...string) *exec.Cmd {
	tb.Helper()
	bin, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, roleArgsEnv+"="+strings.Join(args, " "))
	return cmd
}

// waitReady polls url until it answers 200, the process exits, or 15 s pass.
func waitReady(url string, exited <-chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before serving: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("not serving %s after 15 s", url)
}

// nginxConf proxies to one upstream over kept-alive HTTP/1.1 connections
// without buffering responses (the setup in front of an LLM server), one
// worker per core. All state lives under the prefix directory.
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
	client_max_body_size 64m;
	client_body_buffer_size 64k;
	upstream worker { server %[2]s; keepalive 256; }
	server {
		listen %[3]s;
		location / {
			proxy_pass http://worker;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}
	}
}
`

// haproxyConf is HAProxy in HTTP mode with connection reuse and
// http-no-delay (no Nagle-style batching: what streaming needs).
const haproxyConf = `global
	maxconn 8192
defaults
	mode http
	timeout connect 5s
	timeout client 60s
	timeout server 60s
	option http-no-delay
	http-reuse always
frontend fe
	bind %[2]s
	default_backend be
backend be
	server w1 %[1]s
`

// baseBinaryEnv names a test binary of this package built from another
// tree (go test -c); its router is measured as the peer "router_base".
const baseBinaryEnv = "AUTOINFER_PROXYBENCH_BASE"

// peer starts the named peer in front of upstream (host:port); ok is false
// when its program is not installed.
func peer(ctx context.Context, tb testing.TB, name, upstream string) (p *proc, ok bool) {
	tb.Helper()
	addr := freeAddr(tb)
	base := "http://" + addr
	dir := tb.TempDir()
	switch name {
	case "router":
		return start(tb, name, base, self(ctx, tb, "router", addr, "http://"+upstream, "round_robin")), true
	case "router_base":
		// Another build of this benchmark (say, of the main branch) plays
		// the router, so a change is measured against its base in one run.
		bin := os.Getenv(baseBinaryEnv)
		if bin == "" {
			return nil, false
		}
		cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"=router", roleArgsEnv+"="+strings.Join([]string{addr, "http://" + upstream, "round_robin"}, " "))
		return start(tb, name, base, cmd), true
	case "httputil":
		return start(tb, name, base, self(ctx, tb, "reverseproxy", addr, "http://"+upstream)), true
	case "nginx":
		bin, err := exec.LookPath("nginx")
		if err != nil {
			return nil, false
		}
		conf := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, dir, upstream, addr), 0o600); err != nil {
			tb.Fatal(err)
		}
		return start(tb, name, base, exec.CommandContext(ctx, bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf)), true
	case "haproxy":
		bin, err := exec.LookPath("haproxy")
		if err != nil {
			return nil, false
		}
		conf := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(conf, fmt.Appendf(nil, haproxyConf, upstream, addr), 0o600); err != nil {
			tb.Fatal(err)
		}
		return start(tb, name, base, exec.CommandContext(ctx, bin, "-db", "-f", conf)), true
	}
	tb.Fatalf("unknown peer %q", name)
	return nil, false
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTick = 10 * time.Millisecond

// cpu returns the user+system CPU time of p and its descendants.
func (p *proc) cpu() (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("reading /proc: %w", err)
	}
	type stat struct {
		ppid  int
		ticks int64
	}
	stats := map[int]stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the command name, which may contain spaces: state
		// ppid ... utime (14th field overall) stime (15th).
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		stats[pid] = stat{ppid, ut + st}
	}
	if _, ok := stats[p.pid]; !ok {
		return 0, fmt.Errorf("%s (pid %d) is gone:\n%s", p.name, p.pid, p.log)
	}
	in := map[int]bool{p.pid: true}
	for changed := true; changed; { // descendants, whatever the order of /proc
		changed = false
		for pid, s := range stats {
			if !in[pid] && in[s.ppid] {
				in[pid], changed = true, true
			}
		}
	}
	var ticks int64
	for pid := range in {
		ticks += stats[pid].ticks
	}
	return time.Duration(ticks) * clockTick, nil
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
