// Package pgtest runs a real PostgreSQL server for tests: Debian's server
// binaries (initdb, postgres) started in a temporary directory on a free
// loopback port, as an unprivileged user, and stopped after.
//
// PostgreSQL refuses to run as root. When the tests run as root (CI
// containers do), the server runs as the system user named by
// AUTOINFER_PG_USER, by default "postgres", which Debian's postgresql
// package creates: the process is started with that user's credentials
// (no su or runuser in between, so the test owns and reaps it), and the
// data directory is created under the system temporary directory and
// handed to that user. As any other user it runs as that user.
//
// The binaries are found through AUTOINFER_PG_BIN, else `pg_config
// --bindir`, else the newest /usr/lib/postgresql/*/bin. When there are
// none, tests that need a server skip with a message; `make postgres`
// installs them and `make test` runs it first, so there nothing skips.
//
// A package's tests share one server, started on first use: each test
// gets its own database (Shared.Database) and the package's TestMain stops
// the server (Shared.Stop).
package pgtest
