package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/temporal/read"
)

// describeReader answers DescribeWorkflow at once with what the bench's
// running workflow looks like: a pending activity whose failure message
// holds secrets, so the redactor's slow path runs, as in `make bench`.
type describeReader struct{ fakeReader }

func (*describeReader) DescribeWorkflow(_ context.Context, ref read.WorkflowRef) (*read.WorkflowDescription, error) {
	now := time.Now().UTC()
	return &read.WorkflowDescription{
		Observation: read.Observation{Namespace: "default", ObservedAt: now},
		Workflow: read.WorkflowSummary{WorkflowID: ref.WorkflowID, RunID: "0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e6f", WorkflowType: "ShipmentWorkflow",
			TaskQueue: "porthole-demo", Status: "Running", StartTime: &now, ExecutionTime: &now, HistoryLength: 11},
		PendingActivities: []read.PendingActivity{{
			ActivityID: "reserve-1", ActivityType: "ReserveCarrier", State: "Scheduled", Attempt: 7,
			ScheduledTime: &now, LastStartedTime: &now, LastHeartbeatTime: &now,
			LastFailure: &read.FailureSummary{Kind: "application", ApplicationErrorType: "CarrierError", Message: redact.Quote(redact.OriginTemporal,
				"carrier refused the booking: porthole-free-text-marker; upstream said Authorization: Bearer seed-bearer-4f1c2a9e7b3d for key AKIAPORTHOLESEED0001 in session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwb3J0aG9sZSJ9.cG9ydGhvbGUtc2VlZGVyLXNpZ25hdHVyZQ")},
			LastWorkerIdentity: &redact.Text{Text: "porthole-demo-worker\\u202e\\u200b", Origin: redact.OriginTemporal},
		}},
		PendingChildren: []read.PendingChild{{WorkflowID: "shipment-running-1-label", RunID: "0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e70", WorkflowType: "PrintLabelWorkflow", InitiatedID: 5}},
	}, nil
}

// benchChain serves describe_workflow through the whole HTTP chain (auth,
// strict decoding, rate limits set high, audit to a real file, redaction),
// in process, so the profile shows porthole's own cost and the go-sdk's.
func benchChain(b *testing.B, cacheTTL time.Duration) {
	dir := b.TempDir()
	tokensFile := filepath.Join(dir, "tokens")
	token, err := AppendToken(tokensFile, "bench")
	if err != nil {
		b.Fatal(err)
	}
	tokens, err := LoadTokens(tokensFile)
	if err != nil {
		b.Fatal(err)
	}
	log, err := audit.Open(audit.Config{Path: filepath.Join(dir, "audit.log"), Key: []byte(strings.Repeat("k", 64))})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	g, err := NewServer(&describeReader{}, Options{Namespace: "default", Audit: log, CacheTTL: cacheTTL})
	if err != nil {
		b.Fatal(err)
	}
	h, err := g.Handler(HTTPOptions{Tokens: func() *Tokens { return tokens },
		Limits: Limits{PerPrincipal: 1e9, PerPrincipalBurst: 1e9, Global: 1e9, GlobalBurst: 1e9}})
	if err != nil {
		b.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"}}}`
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"structuredContent"`) || strings.Contains(rec.Body.String(), "AKIAPORTHOLESEED0001") {
				b.Fatalf("status %d: %.300s", rec.Code, rec.Body.String())
			}
		}
	})
}

// BenchmarkWholeChain is `make bench`'s porthole mode without Temporal.
func BenchmarkWholeChain(b *testing.B) { benchChain(b, -1) }

// BenchmarkWholeChainCached is `make bench`'s cached mode: every call after
// the first is answered from the cache.
func BenchmarkWholeChainCached(b *testing.B) { benchChain(b, time.Hour) }
