package gateway

import (
	"net/http"
	"runtime/debug"

	"go.uber.org/zap"
)

// recoverPanics turns a panic in any later handler into a 500 with a fixed
// body, and logs the panic and its stack to the operations log (which is
// redacted) rather than to stderr directly as net/http would. It is first
// in the chain so that nothing after it can take the process down.
func (g *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				g.log.Error("panic serving a request", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()),
					zap.String("requestId", requestInfoFrom(r.Context()).RequestID), traceField(r.Context()))
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
