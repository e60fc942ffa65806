package gateway

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/porthole-dev/porthole/audit"
)

// HostPolicy lists the Host names and Origins porthole answers.
type HostPolicy struct {
	// Hosts are names a request's Host may carry, with or without a port:
	// "mcp.example.com" matches any port, "mcp.example.com:443" only that.
	Hosts []string
	// Origins are browser origins (scheme://host[:port]) allowed to call.
	// A request without Origin (every non-browser client) is not affected.
	Origins []string
	// LoopbackOrigins allows pages served from this machine (http or https
	// on localhost, 127.0.0.1 or [::1], any port), such as the MCP
	// Inspector's web UI. A DNS-rebinding page has a foreign origin, so
	// this does not weaken that protection.
	LoopbackOrigins bool
}

// DefaultHostPolicy is safe for loopback use: the loopback names, and
// browser pages only from this machine.
func DefaultHostPolicy() HostPolicy {
	return HostPolicy{Hosts: []string{"localhost", "127.0.0.1", "::1"}, LoopbackOrigins: true}
}

// checkHostAndOrigin refuses with 403 a request whose Host is not listed
// (DNS rebinding: a page on evil.example resolves its own name to 127.0.0.1
// and its requests carry Host: evil.example) and a request that carries an
// Origin not listed (a browser page calling porthole from another site), as
// the MCP transport specification requires. Behind a same-pod proxy, list
// the public name in PORTHOLE_ALLOWED_HOSTS: the check stays on, it just
// knows the name the proxy forwards.
func (g *Server) checkHostAndOrigin(p HostPolicy, routes paths) func(http.Handler) http.Handler {
	hosts := map[string]bool{}
	for _, h := range p.Hosts {
		hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
		hosts[strings.ToLower(h)] = true
	}
	origins := originSet(p.Origins)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hostAllowed(hosts, r.Host) {
				g.denied(r, audit.OutcomeDenied, http.StatusForbidden, "Host not allowed")
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
			// The protected-resource metadata is public: a page of any
			// origin may read it (cors leaves it to its own handler).
			if o := r.Header.Values("Origin"); !routes.isMetadata(r) && (len(o) > 1 || len(o) == 1 && !originAllowed(origins, p.LoopbackOrigins, o[0])) {
				g.denied(r, audit.OutcomeDenied, http.StatusForbidden, "Origin not allowed")
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// originSet is the allowed origins, as originAllowed looks them up.
func originSet(list []string) map[string]bool {
	origins := map[string]bool{}
	for _, o := range list {
		origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return origins
}

func hostAllowed(hosts map[string]bool, host string) bool {
	host = strings.ToLower(host)
	if host == "" {
		return false
	}
	if hosts[host] {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		return false
	}
	return hosts[strings.Trim(name, "[]")]
}

func originAllowed(origins map[string]bool, loopback bool, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil {
		return false
	}
	if loopback && (u.Scheme == "http" || u.Scheme == "https") {
		switch strings.ToLower(u.Hostname()) {
		case "localhost", "127.0.0.1", "::1":
			return true
		}
	}
	return origins[strings.ToLower(u.Scheme+"://"+u.Host)]
}
