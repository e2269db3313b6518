package pgtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Shared is one server for a package's tests, started on first use. The
// zero value is ready; the package's TestMain calls Stop after m.Run.
type Shared struct {
	mu  sync.Mutex
	srv *Server
	err error
	n   int
}

// Server returns the running server, starting it on the first call. Tests
// skip when no server binaries are installed and fail when one would not
// start.
func (s *Shared) Server(t testing.TB) *Server {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil && s.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		s.srv, s.err = Start(ctx)
		cancel()
	}
	switch {
	case errors.Is(s.err, ErrNoServer):
		t.Skip(s.err)
	case s.err != nil:
		t.Fatal(s.err)
	}
	return s.srv
}

// Database creates an empty database for one test and returns its URL
// (with the password).
func (s *Shared) Database(t testing.TB) string {
	t.Helper()
	srv := s.Server(t)
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("test_%d", s.n)
	s.mu.Unlock()
	if err := srv.CreateDatabase(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	return srv.URL(name)
}

// Stop stops the server if one was started.
func (s *Shared) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Stop()
	s.srv = nil
	return err
}

// CreateDatabase creates database name (a plain identifier).
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connecting to create database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("creating database %s: %w", name, err)
	}
	return nil
}
