package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoServer is wrapped when no PostgreSQL server binaries are installed.
var ErrNoServer = errors.New("PostgreSQL server binaries not found (Debian: apt-get install postgresql, or make postgres)")

// Superuser is the role initdb creates; Password is its password, required
// for TCP connections (scram-sha-256), so the tests' URLs carry a
// credential as a team's would.
const (
	Superuser = "autoinfer"
	Password  = "s3cret-pg-pw"
)

// Server is a running PostgreSQL server owned by the test process.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the log reader has read the server's last line

	mu  sync.Mutex
	log bytes.Buffer
}

// BinDir finds the directory of initdb and postgres.
func BinDir() (string, error) {
	if dir := os.Getenv("AUTOINFER_PG_BIN"); dir != "" {
		return dir, nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", ErrNoServer
}

// version is the major version in /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Start initialises a cluster in a new temporary directory and starts the
// server on a free loopback port; it returns once the server accepts
// connections. Stop stops it and removes the directory.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "autoinfer-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	if err := s.initdb(ctx, bin, cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A port found free can be taken before the server binds it: try a
	// few.
	for range 3 {
		if err = s.start(ctx, bin, cred); err == nil || !strings.Contains(s.Log(), "could not bind") {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting postgres: %w\n%s", err, s.Log())
	}
	return s, nil
}

// credential is who the server runs as: nil (the current user) unless that
// is root, which PostgreSQL refuses.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("AUTOINFER_PG_USER")
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user: %w (set AUTOINFER_PG_USER, or install Debian's postgresql, which creates %q)", err, name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) command(ctx context.Context, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.dir // the server's user may not reach the test's working directory
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// Pdeathsig: a test binary that dies (a timeout's panic) takes its
	// server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (s *Server) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	pwfile := filepath.Join(s.dir, "pw")
	if err := os.WriteFile(pwfile, []byte(Password+"\n"), 0o600); err != nil {
		return err
	}
	if cred != nil {
		for _, p := range []string{s.dir, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	cmd := s.command(ctx, cred, filepath.Join(bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", Superuser,
		"--pwfile", pwfile, "--auth-host", "scram-sha-256", "--auth-local", "trust", "-E", "UTF8", "--locale", "C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// start runs postgres in the foreground as a child of this process and
// waits for "ready to accept connections" in its log (or its exit).
func (s *Server) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.log.Reset()
	s.mu.Unlock()
	// Durability settings are off: a test cluster is thrown away.
	cmd := s.command(context.WithoutCancel(ctx), cred, filepath.Join(bin, "postgres"), "-D", filepath.Join(s.dir, "data"),
		"-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	go s.readLog(stderr, ready, done)
	select {
	case <-ready:
		s.cmd, s.port, s.done = cmd, port, done
		return nil
	case <-done:
		return fmt.Errorf("postgres exited: %w", cmd.Wait())
	case <-ctx.Done():
		// Killed: its exit status says nothing more than ctx does.
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		return ctx.Err()
	}
}

// readLog keeps the server's log and signals readiness; it returns when
// the server closes its stderr, that is when it exits.
func (s *Server) readLog(r io.Reader, ready, done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.log.WriteString(line + "\n")
		s.mu.Unlock()
		if !signalled && strings.Contains(line, "ready to accept connections") {
			signalled = true
			close(ready)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Log is what the server has logged so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// URL is a connection URL for database db, with the superuser's password.
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(Superuser, Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Stop shuts the server down (fast shutdown: open sessions are ended),
// waits for it, and removes its directory.
func (s *Server) Stop() error {
	var errs []error
	if s.cmd != nil {
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
			errs = append(errs, err)
		}
		<-s.done
		if err := s.cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("postgres: %w", err))
		}
	}
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// waitBound bounds a test's wait for the server to start.
const waitBound = 2 * time.Minute
