package limit

import (
	"net/netip"
	"strconv"
)

// DefaultIPv6Prefix is the length of the IPv6 prefix that counts as one
// client address for the per-address limits: a /64 is what one subscriber
// or one host is usually given, and anyone with one can send from any of
// its 2^64 addresses.
const DefaultIPv6Prefix = 64

// AddrKey is the key of a client address for the per-address limits
// (failed authentications, the introspection quota): an IPv4 address
// itself (an IPv4-mapped IPv6 address as the IPv4 one), and an IPv6
// address as the prefix of v6Prefix bits that holds it, so that one
// network's many addresses share one budget. A string that is no address
// is its own key.
func AddrKey(addr string, v6Prefix int) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(v6Prefix)
	if err != nil {
		return addr
	}
	return p.Addr().String() + "/" + strconv.Itoa(v6Prefix)
}

// Allow takes one from addr's bucket if it holds one, and reports whether
// it did: a [Failures] so used is a per-address quota (of introspections)
// rather than a count of failures.
func (f *Failures) Allow(addr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entry(addr).AllowN(f.now(), 1)
}
