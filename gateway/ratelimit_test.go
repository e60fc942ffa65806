package gateway

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/porthole-dev/porthole/gateway/limit"
)

func TestRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("a principal's burst is honoured within its cost, then 429 with Retry-After", func(t *testing.T) {
		t.Parallel()
		f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 1, PerPrincipalBurst: 6, Global: 1000, GlobalBurst: 1000}})
		accepted := 0
		var last http.Header
		for i := 0; i < 10; i++ {
			status, h, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("get_workflow_history")) // cost 3
			switch status {
			case http.StatusOK:
				accepted++
			case http.StatusTooManyRequests:
				last = h
				if !strings.Contains(body, "principal limit") {
					t.Errorf("429 body %q does not name the limit", body)
				}
			default:
				t.Fatalf("status %d", status)
			}
		}
		if accepted != 2 {
			t.Fatalf("accepted %d history calls of cost 3 from a burst of 6, want 2", accepted)
		}
		if ra, err := strconv.Atoi(last.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
			t.Fatalf("Retry-After %q, want 1..3 s for 3 units at 1/s", last.Get("Retry-After"))
		}
	})
	t.Run("one principal's flood does not raise another's refusals", func(t *testing.T) {
		t.Parallel()
		f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 2, PerPrincipalBurst: 5, Global: 1000, GlobalBurst: 1000}})
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 30; j++ {
					f.do(t, "POST", "/mcp", bearer(f.alice), callBody("describe_namespace"))
				}
			}()
		}
		wg.Wait()
		for i := 0; i < 5; i++ {
			if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.bob), callBody("describe_namespace")); status != http.StatusOK {
				t.Fatalf("bob's call %d after alice's flood: status %d", i, status)
			}
		}
	})
	t.Run("the global limit protects the namespace across principals", func(t *testing.T) {
		t.Parallel()
		f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 1000, PerPrincipalBurst: 1000, Global: 1, GlobalBurst: 4}})
		for _, who := range []string{f.alice, f.bob} {
			f.do(t, "POST", "/mcp", bearer(who), callBody("list_workflows")) // cost 2 each
		}
		status, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("describe_namespace"))
		if status != http.StatusTooManyRequests || !strings.Contains(body, "global limit") {
			t.Fatalf("after the global burst: status %d body %q", status, body)
		}
	})
}

// TestLimitsThatWouldNotLimitAreRefused: a NaN or infinite rate, or a
// burst of zero, let every call through or none; the front refuses to start
// with one rather than serve without a limit.
func TestLimitsThatWouldNotLimitAreRefused(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	for _, l := range []limit.Limits{
		{PerPrincipal: math.NaN(), PerPrincipalBurst: 20, Global: 15, GlobalBurst: 30},
		{PerPrincipal: 5, PerPrincipalBurst: 20, Global: math.Inf(1), GlobalBurst: 30},
		{PerPrincipal: 5, PerPrincipalBurst: 0, Global: 15, GlobalBurst: 30},
		{PerPrincipal: -1, PerPrincipalBurst: 20, Global: 15, GlobalBurst: 30},
	} {
		if _, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true, Limits: l}); err == nil {
			t.Errorf("limits %+v were accepted", l)
		}
	}
}

// TestCostsStandWithTheDefaultRates: limits that give costs but no rates
// take the default rates and keep the costs; the costs used to be dropped
// with the rest, so a tool priced above any burst was charged 1.
func TestCostsStandWithTheDefaultRates(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{Limits: limit.Limits{Costs: map[string]int{"describe_namespace": 50}}})
	if status, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("describe_namespace")); status != http.StatusTooManyRequests {
		t.Fatalf("a call costing more than the default burst: %d %s, want 429", status, body)
	}
}
