package limit

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestFailuresRemembersABoundedNumberOfAddresses: neither a flood of
// distinct addresses nor a flood of failures from one address grows the
// limiter's state past its capacity.
func TestFailuresRemembersABoundedNumberOfAddresses(t *testing.T) {
	t.Parallel()
	fl := NewFailures(100, 3, time.Hour)
	for i := 0; i < 100000; i++ {
		fl.Failed(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String())
	}
	if fl.Size() > 100 {
		t.Fatalf("a flood of distinct addresses left %d entries, want at most 100", fl.Size())
	}
	for i := 0; i < 100000; i++ {
		fl.Failed("192.0.2.1")
	}
	if fl.Size() > 100 {
		t.Fatalf("a flood of bad tokens from one address left %d entries", fl.Size())
	}
}

// TestBucketsAdmitRateTimesWindowPlusBurst: on a simulated clock, the calls
// admitted over a window are the burst plus the rate times the window.
func TestBucketsAdmitRateTimesWindowPlusBurst(t *testing.T) {
	t.Parallel()
	l := NewBuckets(Limits{PerPrincipal: 10, PerPrincipalBurst: 5, Global: 1000, GlobalBurst: 1000})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return clock }
	accepted := 0
	for i := 0; i < 1000; i++ { // 100 attempts per simulated second for 10 s
		if l.Charge("alice", 1, true) == nil {
			accepted++
		}
		clock = clock.Add(10 * time.Millisecond)
	}
	if want := 5 + 10*10; accepted < want-2 || accepted > want+2 {
		t.Fatalf("accepted %d over 10 s at 10/s with burst 5, want %d ± 2", accepted, want)
	}
}

// TestBucketsOfPrincipalsAtRestAreDropped: OAuth callers are as many as an
// issuer lets sign up; a bucket full again is dropped once many are held.
func TestBucketsOfPrincipalsAtRestAreDropped(t *testing.T) {
	t.Parallel()
	b := NewBuckets(Limits{PerPrincipal: 1000, PerPrincipalBurst: 10, Global: 1e9, GlobalBurst: 1e9})
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }
	for i := 0; i < 3*sweepAt; i++ {
		b.Charge(fmt.Sprintf("oauth:corp:user-%d", i), 1, false)
		now = now.Add(time.Millisecond) // each bucket is full again 1 ms later
	}
	if n := len(b.per); n > sweepAt+1 {
		t.Fatalf("%d buckets held for %d principals who each called once", n, 3*sweepAt)
	}
}

func TestAnIPv6NetworkIsOneAddressForTheLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"not-an-address", "not-an-address"},
	} {
		if got := AddrKey(c.addr, DefaultIPv6Prefix); got != c.want {
			t.Errorf("AddrKey(%q, 64) = %q, want %q", c.addr, got, c.want)
		}
	}
	if got := AddrKey("2001:db8:1:2:aaaa::1", 128); got != "2001:db8:1:2:aaaa::1/128" {
		t.Errorf("with /128 each address is its own: %q", got)
	}
	if got := AddrKey("2001:db8:1:2:aaaa::1", 48); got != "2001:db8:1::/48" {
		t.Errorf("with /48: %q", got)
	}
}
