package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync/atomic"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/tlsserver"
)

// Auditor writes audit records. *audit.Log is the real one; Write must
// return only once the record is durable enough to act on, or an error.
type Auditor interface {
	Write(ctx context.Context, rec audit.Record) error
}

var _ Auditor = (*audit.Log)(nil)

// requestInfo is what the transport knows of a request, carried in its context
// to the audit records of the call.
type requestInfo struct {
	RequestID  string
	ClientAddr string
	// ClientCert is the subject of the client certificate the TLS
	// connection verified, "" for none.
	ClientCert string
	Transport  string
	UserAgent  string
	// request is the HTTP request's context, which ends when the client
	// hangs up. The go-sdk hands MCP handlers a context detached from the
	// request's cancellation, so porthole carries it here (see
	// followRequest) to stop a Temporal read nobody is waiting for.
	request context.Context
	// recorded is set once a call record is written for the request, so
	// that a refusal after it is not recorded twice.
	recorded *atomic.Bool
}

type requestInfoKey struct{}

func withRequestInfo(ctx context.Context, ci requestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ci)
}

func requestInfoFrom(ctx context.Context) requestInfo {
	ci, _ := ctx.Value(requestInfoKey{}).(requestInfo)
	return ci
}

// RequestIDHeader carries the id of a request back to the client, so that a
// user can quote it to an operator who finds it in the logs.
const RequestIDHeader = "X-Request-Id"

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// identify gives each HTTP request an id and records what the transport
// knows of its caller: the client's address (see resolveClient), the
// subject of its client certificate when porthole's TLS verified one, and
// its User-Agent. The id is porthole's own: a client-sent X-Request-Id is
// ignored, so a client cannot make two requests look like one.
func identify(trusted TrustedProxies, traced bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := newRequestID()
			w.Header().Set(RequestIDHeader, id)
			ci := requestInfo{RequestID: id, ClientAddr: resolveClient(r, trusted).String(),
				ClientCert: tlsserver.Subject(r.TLS), Transport: "http", UserAgent: r.UserAgent(), request: r.Context()}
			if traced {
				// The audit record's request id, and the client as
				// porthole resolved it (a client's own X-Forwarded-For
				// counts only from a trusted proxy), for the server span.
				if c := chainFrom(r.Context()); c != nil {
					c.requestID, c.clientAddr = id, ci.ClientAddr
				}
			}
			next.ServeHTTP(w, r.WithContext(withRequestInfo(r.Context(), ci)))
		})
	}
}
