package sim

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
)

// crashRecorder is a ResponseWriter that notes, at every write and flush,
// whether the server had already been told to crash.
type crashRecorder struct {
	s           *Server
	header      http.Header
	body        strings.Builder
	status      int
	lateWrite   bool // a write or flush after the crash signal
	flushedLen  int  // body length at the last flush
	headerAtOut http.Header
}

func (r *crashRecorder) crashed() bool { return len(r.s.crash) > 0 }

func (r *crashRecorder) Header() http.Header { return r.header }

func (r *crashRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.headerAtOut = r.header.Clone()
	}
}

func (r *crashRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.lateWrite = r.lateWrite || r.crashed()
	return r.body.WriteString(string(b))
}

func (r *crashRecorder) Flush() {
	r.lateWrite = r.lateWrite || r.crashed()
	r.flushedLen = r.body.Len()
}

// The crash fault cuts connections as soon as it is signalled, so the
// admin answer must be complete before: its length in the headers, every
// byte written and flushed, nothing written after the signal. (Without
// that, a client saw "unexpected EOF" in about 1 of 100 runs.)
func TestCrashAnswerIsCompleteBeforeTheCrash(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Engine: engcfg.Config{Model: "m"}, Profile: Profile{Name: "p", StepBaseMs: 1, LinkGBps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "/admin/faults", strings.NewReader(`{"crash":true}`))
	rec := &crashRecorder{s: s, header: http.Header{}}
	s.handleSetFaults(rec, req)
	if !rec.crashed() {
		t.Fatal("handler did not signal the crash")
	}
	if rec.lateWrite {
		t.Error("the answer was written or flushed after the crash was signalled")
	}
	if rec.status != http.StatusOK {
		t.Errorf("status %d, want 200", rec.status)
	}
	body := rec.body.String()
	if cl := rec.headerAtOut.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
		t.Errorf("Content-Length %q when the headers went out, body has %d bytes: the client cannot tell a cut answer from a whole one", cl, len(body))
	}
	if rec.flushedLen != len(body) || len(body) == 0 {
		t.Errorf("flushed %d of %d body bytes before the crash", rec.flushedLen, len(body))
	}
	if c := rec.headerAtOut.Get("Connection"); c != "close" {
		t.Errorf("Connection %q, want close: the connection dies with the server", c)
	}
	if !strings.Contains(body, `"crash":true`) {
		t.Errorf("answer %s does not echo the crash fault", body)
	}
}
