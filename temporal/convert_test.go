package temporal

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// TestAFailureMessageCutAtItsCapLeavesNoHalfSecret: a worker's failure
// message longer than the quoting cap, with a token straddling the cap, is
// redacted whole before it is cut. Cut first, its first half would reach
// the client, and no later redaction recognises half a JWT.
func TestAFailureMessageCutAtItsCapLeavesNoHalfSecret(t *testing.T) {
	t.Parallel()
	red, _ := redact.New()
	msg := strings.Repeat("x", quote.MaxQuotedLen-30) + " " + temporaltest.SecretJWT + " the end"
	f := &failurepb.Failure{Message: msg}
	got := conv{q: quote.New(red)}.failureSummary(f).Message.Text
	if strings.Contains(got, "eyJ") || !strings.Contains(got, "[REDACTED:jwt]") {
		t.Fatalf("the cut message is %q; want the token redacted whole", got[len(got)-80:])
	}
	if unredacted := (conv{q: quote.New(nil)}).failureSummary(f).Message.Text; !strings.Contains(unredacted, "eyJ") {
		t.Fatal("without a redactor the cut does not split the token, so this test shows nothing")
	}
	// Redacted once more, as every answer is, the cut-first message still
	// holds the token's first half: the leak this guards against.
	if again, _ := red.String((conv{q: quote.New(nil)}).failureSummary(f).Message.Text); !strings.Contains(again, "eyJ") {
		t.Fatal("the redactor recognises half a token; the test's premise is wrong")
	}
}

// TestASearchAttributeListTemporalRefusesIsIncompleteWithANote: Temporal
// Cloud may refuse the operator service's read (PermissionDenied) or not
// offer it (Unimplemented). The answer is then an incomplete list with
// porthole's note naming the refusal, not an error; porthole's own guard
// refusing the RPC stays an error, since it means a bug.
func TestASearchAttributeListTemporalRefusesIsIncompleteWithANote(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	for _, code := range []codes.Code{codes.PermissionDenied, codes.Unimplemented} {
		l, err := c.searchAttributes(read.Observation{Namespace: "orders"}, nil, status.Error(code, "request unauthorized"))
		if err != nil {
			t.Fatalf("%s: err = %v, want an incomplete answer", code, err)
		}
		if l.Complete || l.Attributes == nil || len(l.Attributes) != 0 {
			t.Errorf("%s: list = %+v, want incomplete and empty", code, l)
		}
		if l.Note == nil || l.Note.Origin != quote.OriginPorthole || !strings.Contains(l.Note.Text, code.String()) {
			t.Errorf("%s: note = %+v, want porthole's sentence naming the code", code, l.Note)
		}
	}
	guard := status.Errorf(codes.PermissionDenied, "%s %s", guardMessage, "/temporal.api.operatorservice.v1.OperatorService/ListSearchAttributes")
	if _, err := c.searchAttributes(read.Observation{}, nil, guard); !errors.Is(err, read.ErrDenied) {
		t.Errorf("the guard's refusal: err = %v, want ErrDenied", err)
	}
	if _, err := c.searchAttributes(read.Observation{}, nil, status.Error(codes.Unavailable, "down")); !errors.Is(err, read.ErrUnavailable) {
		t.Errorf("an outage: err = %v, want ErrUnavailable", err)
	}
}

// TestSearchAttributesCarryNamesAndTypesOnly: a constructed answer with a
// storage schema shows that only names and types are read, sorted, each
// with its side.
func TestSearchAttributesCarryNamesAndTypesOnly(t *testing.T) {
	t.Parallel()
	resp := &operatorservice.ListSearchAttributesResponse{
		SystemAttributes: map[string]enumspb.IndexedValueType{"WorkflowId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "CloseTime": enumspb.INDEXED_VALUE_TYPE_DATETIME},
		CustomAttributes: map[string]enumspb.IndexedValueType{"Customer\u202eId": enumspb.INDEXED_VALUE_TYPE_TEXT},
		StorageSchema:    map[string]string{"Customer\u202eId": "PORTHOLE-CANARY-storage-schema"},
	}
	l, err := conv{q: quote.New(nil)}.searchAttributes(read.Observation{}, resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []read.SearchAttribute{
		{Name: "CloseTime", Type: "Datetime", System: true, Source: "temporal"},
		{Name: `Customer\u202EId`, Type: "Text", Source: "temporal"},
		{Name: "WorkflowId", Type: "Keyword", System: true, Source: "temporal"},
	}
	if !l.Complete || !slices.Equal(l.Attributes, want) {
		t.Fatalf("attributes = %+v, want %+v", l.Attributes, want)
	}
}

// TestABatchOperationNeverShowsItsQuery: a batch's visibility query can
// hold search-attribute values, and its executions are not asked for; the
// description carries neither, and its free text only quoted.
func TestABatchOperationNeverShowsItsQuery(t *testing.T) {
	t.Parallel()
	resp := &workflowservice.DescribeBatchOperationResponse{
		JobId: "job-1", OperationType: enumspb.BATCH_OPERATION_TYPE_TERMINATE_WORKFLOW, State: enumspb.BATCH_OPERATION_STATE_RUNNING,
		TotalOperationCount: 3, CompleteOperationCount: 2, FailureOperationCount: 1,
		Identity: "ops@example", Reason: "cleanup",
		Query:      "CustomerId = 'PORTHOLE-CANARY-batch-query'",
		Executions: []*commonpb.Execution{{BusinessId: "PORTHOLE-CANARY-batch-execution"}},
	}
	d := conv{q: quote.New(nil)}.batchDescription(read.Observation{}, resp)
	b, _ := json.Marshal(d)
	if strings.Contains(string(b), temporaltest.CanaryPrefix) {
		t.Fatalf("description = %s, want neither query nor executions", b)
	}
	if d.OperationType != "TerminateWorkflow" || d.State != "Running" || d.TotalOperationCount != 3 || d.CompleteOperationCount != 2 || d.FailureOperationCount != 1 {
		t.Fatalf("description = %+v", d)
	}
	// The secret in the reason is left to the redaction every answer
	// passes through (quote.Quoter redacts only what it must cut).
	if d.Identity == nil || d.Identity.Origin != quote.OriginTemporal || d.Reason == nil || d.Reason.Origin != quote.OriginTemporal {
		t.Fatalf("identity %+v, reason %+v: want quoted Temporal text", d.Identity, d.Reason)
	}
}
