package sim

import (
	"net"
	"net/http"
	"strings"
)

// adminPrefix is where the fault-injection routes live.
const adminPrefix = "/admin/"

// adminRoutes registers GET/POST /admin/faults when admin is on. When it is
// off the paths answer 404 like any unknown route, naming the flag, so a
// worker exposed beyond loopback cannot be crashed by whoever reaches it.
func (s *Server) adminRoutes(mux *http.ServeMux, admin bool) {
	if !admin {
		mux.HandleFunc(adminPrefix, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, &apiError{status: http.StatusNotFound, typ: typeNotFound,
				msg: "no route for " + r.Method + " " + r.URL.Path + " (admin routes are off; start with --enable-admin)"})
		})
		return
	}
	mux.HandleFunc("GET /admin/faults", s.handleGetFaults)
	mux.HandleFunc("POST /admin/faults", s.handleSetFaults)
}

// refuseUnlessAdmin resets the connection of every request while the
// RefuseConnections fault is set, except admin requests: the fault must
// stay clearable through the port it breaks. The reset (RST, no answer)
// looks to a client like a refused or dropped connection.
func (s *Server) refuseUnlessAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.faults.Load().RefuseConnections || strings.HasPrefix(r.URL.Path, adminPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			// Not hijackable (HTTP/2 or a test recorder): abort the
			// response, which net/http turns into a cut connection.
			panic(http.ErrAbortHandler)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST
		}
		_ = conn.Close()
	})
}
