package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxies are the networks whose connections may name the client
// they forward for.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies reads a comma-separated list of CIDRs or addresses.
// Bad entries are refused at start, never skipped.
func ParseTrustedProxies(s string) (TrustedProxies, error) {
	var out TrustedProxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is not a CIDR: %v", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (t TrustedProxies) contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// resolveClient decides who the client is. It is RemoteAddr, the address of
// the TCP peer, which nobody on the other side can forge. Only when that
// peer is a configured trusted proxy does X-Forwarded-For count, and then
// only its rightmost entry that is not itself a trusted proxy: each proxy
// appends the address it saw, so entries to the left of the last trusted hop
// are whatever the client wrote. Forwarded, X-Real-IP and the rest are never
// read. Spoofed headers from an untrusted peer therefore change neither the
// identity in the audit log nor the key of any rate limit.
//
// identify writes it into the request's call info as a bare IP (no port),
// the key every per-client limit uses.
func resolveClient(r *http.Request, trusted TrustedProxies) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if len(trusted) == 0 || !trusted.contains(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// A hop porthole cannot read: stop at the last one it trusts.
			return peer
		}
		a = a.Unmap()
		if !trusted.contains(a) {
			return a
		}
		peer = a
	}
	return peer
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return a.Unmap()
}
