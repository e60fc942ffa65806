package gateway

import (
	"net/http"
)

// What a browser page of an allowed origin may send porthole, and read of
// its answers (the Fetch standard's CORS protocol). A page sends its token
// in the Authorization header, never in a cookie, so no answer allows
// credentials: a browser then sends none of the cookies it holds for
// porthole's host, and a page cannot ride on them.
const (
	corsAllowMethods  = "GET, POST, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Mcp-Protocol-Version, Last-Event-ID"
	corsExposeHeaders = "WWW-Authenticate, Mcp-Protocol-Version, Retry-After"
	// corsMaxAge is how long, in seconds, a browser may reuse a preflight.
	corsMaxAge = "600"
)

// paths are the paths of the front's kinds of routes.
type paths struct {
	// calls are the MCP endpoints (/mcp, and /sse when served), the only
	// paths CORS is answered on.
	calls map[string]bool
	// metadata are the paths of the OAuth protected-resource metadata,
	// public, which any origin may read (its handler says so with
	// Access-Control-Allow-Origin: *); none without OAuth.
	metadata map[string]bool
}

// isMetadata reports whether r asks for the protected-resource metadata,
// or is a browser's preflight of that.
func (p paths) isMetadata(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodOptions) && p.metadata[r.URL.Path]
}

// cors answers a browser's CORS preflight of an MCP endpoint (an OPTIONS
// with Access-Control-Request-Method) before authentication, which a
// preflight never carries, and has every other answer there name the
// page's origin and the headers its script may read (a 401's
// WWW-Authenticate among them, which is how a page finds the
// authorization server). It runs after checkHostAndOrigin, so an Origin
// here is one allowed: a page of another origin was refused there, with no
// CORS header, and its browser keeps the answer from it. Answers vary by
// Origin, so no cache shares one across origins.
//
// Security: a loopback origin, allowed by default so that the Inspector's
// page on this machine may call, gets CORS only while calls need a token.
// Without authentication, any page a local dev server serves could
// otherwise read the namespace; there only the origins listed get CORS.
func cors(p paths, hosts HostPolicy, authenticated bool) func(http.Handler) http.Handler {
	listed := originSet(hosts.Origins)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !p.calls[r.URL.Path] {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Add("Vary", "Origin")
			origin := r.Header.Get("Origin")
			if origin == "" || !originAllowed(listed, authenticated && hosts.LoopbackOrigins, origin) {
				next.ServeHTTP(w, r)
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
				h.Set("Access-Control-Allow-Methods", corsAllowMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", corsMaxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			next.ServeHTTP(w, r)
		})
	}
}
