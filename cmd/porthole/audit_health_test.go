package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestAuditDiskBelowItsMinimumRefusesCallsAndSaysSoOnce: through the
// binary and a real Temporal, PORTHOLE_AUDIT_MIN_FREE_BYTES above the free
// space of the audit log's file system refuses each call with a sentence
// before it reaches Temporal, and leaves no call record; /readyz says why,
// the metric counts the refusals, and the operations log says it once.
func TestAuditDiskBelowItsMinimumRefusesCallsAndSaysSoOnce(t *testing.T) {
	t.Parallel()
	endpoint, token, p, auditLog := serveHTTP(t, "PORTHOLE_AUDIT_MIN_FREE_BYTES=9223372036854775807")
	for i := 0; i < 3; i++ {
		a := callRaw(endpoint, token, "describe_namespace", nil)
		if a.rpcError != "porthole's audit log is almost out of disk space, so the call was not made; retry later" {
			t.Fatalf("call %d with the audit disk below its minimum: %+v, want the low-space sentence", i, a)
		}
	}
	admin := adminOf(t, p)
	get := func(path string) (int, string) {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "kept free (PORTHOLE_AUDIT_MIN_FREE_BYTES)") {
		t.Fatalf("/readyz with the audit disk below its minimum: %d %q", status, body)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`porthole_audit_write_failures_total{reason="low_space"} 3`,
		"porthole_audit_sink_ok 0",
		"porthole_audit_free_bytes ",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if n := strings.Count(p.logs.String(), `"msg":"the audit log is failing; /readyz is not ready until it recovers"`); n != 1 {
		t.Errorf("the operations log says the audit log is failing %d times, want once:\n%s", n, p.logs)
	}
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"kind":"call"`) {
		t.Errorf("a refused call left a call record:\n%s", b)
	}
}
