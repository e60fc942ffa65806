package gateway

import (
	"net/http"
	"sync/atomic"

	"github.com/porthole-dev/porthole/audit"
)

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// auditRefusals records a denial for every request the MCP transport refused
// before any call was recorded: a body over the size cap (413), a Host the
// go-sdk's DNS-rebinding check refused (403), a body that is not JSON-RPC
// (400), a wrong content type (415) or Accept header (406). A request that
// reached the audit middleware has its own records and is not counted twice.
func (g *Server) auditRefusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var recorded atomic.Bool
		ci := requestInfoFrom(r.Context())
		ci.recorded = &recorded
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(withRequestInfo(r.Context(), ci)))
		if rec.status < 400 || recorded.Load() {
			return
		}
		outcome := audit.OutcomeInvalid
		switch rec.status {
		case http.StatusForbidden, http.StatusUnauthorized:
			outcome = audit.OutcomeDenied
		case http.StatusTooManyRequests:
			outcome = audit.OutcomeRateLimited
		case http.StatusInternalServerError:
			outcome = audit.OutcomeInternal
		}
		g.denied(r, outcome, rec.status, "refused by the MCP transport: "+http.StatusText(rec.status))
	})
}
