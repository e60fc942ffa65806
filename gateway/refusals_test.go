package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
)

// TestRefusedBodiesAreChargedAndTheirReasonsBounded: a body strict decoding
// refuses costs its principal a unit like any request (past the burst, 429),
// and the denial's reason quotes at most a capped, redacted piece of it. An
// AWS key id in a refused body once reached the audit log as sent.
func TestRefusedBodiesAreChargedAndTheirReasonsBounded(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 0.001, PerPrincipalBurst: 3, Global: 1000, GlobalBurst: 1000}})
	bad := `{"jsonrpc":"2.0","id":1,"method":"tools/list","AKIAPORTHOLESEED0001":1,"` + strings.Repeat("k", 100000) + `":2}`
	for i := 0; i < 3; i++ {
		if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.alice), bad); status != http.StatusBadRequest {
			t.Fatalf("bad body %d: status %d, want 400", i, status)
		}
	}
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.alice), bad); status != http.StatusTooManyRequests {
		t.Fatalf("a bad body past the burst: status %d, want 429", status)
	}
	for _, r := range f.auditor.all() {
		if r.Kind != audit.KindDenial || r.Outcome != audit.OutcomeInvalid {
			continue
		}
		if strings.Contains(r.Reason, "AKIAPORTHOLESEED0001") || len(r.Reason) > 600 {
			t.Fatalf("a denial's reason holds the key id or is %d bytes: %.300q", len(r.Reason), r.Reason)
		}
	}
}

// TestDenialsPastTheBudgetAreSummarised: a flood of refused requests from
// one address writes its first denials one by one and the rest as one
// summary per interval, so refusals cannot fill the disk; a principal
// hammering its rate limit is budgeted as that principal. The summaries
// still count every denial.
func TestDenialsPastTheBudgetAreSummarised(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20, Limits: limit.Limits{PerPrincipal: 0.001, PerPrincipalBurst: 1, Global: 1000, GlobalBurst: 1000}},
		func(o *Options) { o.DenialBudget, o.DenialInterval = 5, time.Hour })
	for i := 0; i < 200; i++ {
		f.do(t, "POST", "/mcp", bearer(fmt.Sprintf("ph_guess%d", i)), listToolsBody)
	}
	f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody) // alice's burst
	for i := 0; i < 50; i++ {
		f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
	}
	count := func() (unauth, limited, summarised map[string]int) {
		unauth, limited, summarised = map[string]int{}, map[string]int{}, map[string]int{}
		for _, r := range f.auditor.all() {
			switch {
			case r.Kind == audit.KindDenial && r.Outcome == audit.OutcomeUnauthenticated:
				unauth[r.ClientAddr]++
			case r.Kind == audit.KindDenial && r.Outcome == audit.OutcomeRateLimited:
				limited[r.Principal]++
			case r.Kind == audit.KindDenials:
				for _, g := range r.Groups {
					summarised[string(g.Outcome)] += g.Count
				}
			}
		}
		return
	}
	unauth, limited, summarised := count()
	if len(unauth) != 1 || unauth["127.0.0.1"] != 5 || limited["alice"] != 5 || len(summarised) != 0 {
		t.Fatalf("before the interval ends: %v unauthenticated, %v rate limited, %v summarised; want 5 of each written, none summarised", unauth, limited, summarised)
	}
	f.server.Close()
	_, _, summarised = count()
	if summarised["unauthenticated"] != 195 || summarised["rate_limited"] != 45 {
		t.Fatalf("summarised at shutdown: %v; want 195 unauthenticated and 45 rate limited", summarised)
	}
}
