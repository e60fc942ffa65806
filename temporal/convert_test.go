package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/operatorservice/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

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

// failureSummary is a failure read as the first of an answer's.
func (c conv) failureSummary(f *failurepb.Failure) *read.FailureSummary {
	return c.failureWithin(f, newFailureText())
}

// chain is a failure with n causes below it, each an application failure
// whose message is msg and whose details and stack trace hold a canary.
func chain(n int, msg string) *failurepb.Failure {
	var f *failurepb.Failure
	for i := n; i >= 0; i-- {
		f = &failurepb.Failure{Message: msg, StackTrace: temporaltest.CanaryPrefix + "stack", Cause: f,
			FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
				Type: fmt.Sprintf("Level%d", i), Details: canaryPayloads()}}}
	}
	return f
}

func canaryPayloads() *commonpb.Payloads {
	return &commonpb.Payloads{Payloads: []*commonpb.Payload{{Data: []byte(temporaltest.CanaryFailureDetails)}}}
}

// TestACauseChainIsReadFiveDeep: causes are read outermost first, at most
// five, and the rest counted; no stack trace or detail is read at any
// depth.
func TestACauseChainIsReadFiveDeep(t *testing.T) {
	t.Parallel()
	s := conv{q: quote.New(nil)}.failureSummary(chain(8, "m"))
	if s.ApplicationErrorType != "Level0" || len(s.Causes) != read.MaxFailureCauses || s.Causes[4].ApplicationErrorType != "Level5" || s.MoreCauses != 3 {
		t.Fatalf("summary = %+v", s)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), temporaltest.CanaryPrefix) {
		t.Fatalf("a stack trace or detail was read: %s", b)
	}
	if s := (conv{}).failureSummary(chain(0, "m")); len(s.Causes) != 0 || s.MoreCauses != 0 {
		t.Fatalf("a failure without a cause = %+v", s)
	}
}

// hostileChain is chain(n) with messages of 4 KiB of '<' (six bytes each
// as encoding/json escapes them) and error types of 300 bytes of '"'.
func hostileChain(n int) *failurepb.Failure {
	f := chain(n, strings.Repeat("<", 4096))
	for c := f; c != nil; c = c.GetCause() {
		c.GetApplicationFailureInfo().Type = strings.Repeat(`"`, 300)
	}
	return f
}

// TestAHistoryPageOfFailuresIsBounded: the worst case the page size
// allows, 500 events each failing with a 4 KiB message of characters JSON
// escapes six-fold and five causes alike, with long error types, is read
// until the page's failure text is spent; the rest is counted. The page
// marshals, HTML-escaped as encoding/json writes it by default (the most),
// to under 160 KiB, where unbounded it would be over 20 MiB (found by
// review: the first bound counted message bytes only).
func TestAHistoryPageOfFailuresIsBounded(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	text := newFailureText()
	events := make([]read.HistoryEvent, 0, 500)
	for i := range 500 {
		events = append(events, c.historyEvent(&historypb.HistoryEvent{EventId: int64(i + 1), EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED,
			Attributes: &historypb.HistoryEvent_ActivityTaskFailedEventAttributes{ActivityTaskFailedEventAttributes: &historypb.ActivityTaskFailedEventAttributes{
				Failure: hostileChain(5), ScheduledEventId: 5}}}, text))
	}
	found := 0
	for _, e := range events {
		if e.Failure != nil {
			found++
		}
	}
	b, _ := json.Marshal(historyOf(events, text.leftOut))
	if text.leftOut == 0 || found+text.leftOut != 500 || len(b) > 160<<10 {
		t.Fatalf("%d failures read, %d left out, a page of %d bytes", found, text.leftOut, len(b))
	}
	t.Logf("the worst page: %d failures read, %d left out, %d bytes of JSON", found, text.leftOut, len(b))
	if first := events[0].Failure.Message; first.Origin != "porthole-quoting-temporal" || len(first.Text) < 1000 {
		t.Errorf("the page's first failure was not read: %+v", first)
	}
	if !strings.Contains(string(b), `"failuresLeftOut":`) {
		t.Error("the page does not say it left failures out")
	}
}

func historyOf(events []read.HistoryEvent, leftOut int) read.History {
	return read.History{Events: events, FailuresLeftOut: leftOut}
}

// TestADescriptionsFailuresAreBounded: a workflow with two thousand
// pending activities, each failing with the hostile chain, is described
// within one failure text.
func TestADescriptionsFailuresAreBounded(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	text := newFailureText()
	acts := make([]read.PendingActivity, 0, 2000)
	for range 2000 {
		acts = append(acts, c.pendingActivity(&workflowpb.PendingActivityInfo{ActivityId: "a", LastFailure: hostileChain(5)}, text))
	}
	b, _ := json.Marshal(read.WorkflowDescription{PendingActivities: acts, FailuresLeftOut: text.leftOut})
	if text.leftOut == 0 || acts[0].LastFailure == nil || len(b) > 300<<10 {
		t.Fatalf("%d failures left out, a description of %d bytes", text.leftOut, len(b))
	}
	t.Logf("2000 failing activities: %d failures left out, %d bytes of JSON", text.leftOut, len(b))
}

// TestEveryFailureEventCarriesItsSummary: the failure and timeout events
// the dev server fixtures cannot all produce (workflow tasks, children,
// Nexus operations) carry their summary and timeout type.
func TestEveryFailureEventCarriesItsSummary(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	timeout := &failurepb.Failure{Message: "timed out", FailureInfo: &failurepb.Failure_TimeoutFailureInfo{TimeoutFailureInfo: &failurepb.TimeoutFailureInfo{
		TimeoutType: enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, LastHeartbeatDetails: canaryPayloads()}}}
	nexus := &failurepb.Failure{Message: "nexus said no", FailureInfo: &failurepb.Failure_NexusOperationExecutionFailureInfo{NexusOperationExecutionFailureInfo: &failurepb.NexusOperationFailureInfo{Endpoint: "ep"}}, Cause: chain(0, "handler")}
	cases := []struct {
		e           *historypb.HistoryEvent
		kind, tout  string
		withFailure bool
	}{
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_WorkflowTaskFailedEventAttributes{WorkflowTaskFailedEventAttributes: &historypb.WorkflowTaskFailedEventAttributes{Failure: chain(0, "nondeterminism")}}}, "application", "", true},
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_WorkflowTaskTimedOutEventAttributes{WorkflowTaskTimedOutEventAttributes: &historypb.WorkflowTaskTimedOutEventAttributes{TimeoutType: enumspb.TIMEOUT_TYPE_START_TO_CLOSE}}}, "", "StartToClose", false},
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_ChildWorkflowExecutionFailedEventAttributes{ChildWorkflowExecutionFailedEventAttributes: &historypb.ChildWorkflowExecutionFailedEventAttributes{Failure: chain(1, "child")}}}, "application", "", true},
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_NexusOperationFailedEventAttributes{NexusOperationFailedEventAttributes: &historypb.NexusOperationFailedEventAttributes{Failure: nexus}}}, "nexus operation", "", true},
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_NexusOperationTimedOutEventAttributes{NexusOperationTimedOutEventAttributes: &historypb.NexusOperationTimedOutEventAttributes{Failure: timeout}}}, "timeout", "ScheduleToClose", true},
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes{ActivityTaskTimedOutEventAttributes: &historypb.ActivityTaskTimedOutEventAttributes{Failure: timeout}}}, "timeout", "ScheduleToClose", true},
		{&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{Failure: chain(2, "wf")}}}, "application", "", true},
	}
	for i, tc := range cases {
		e := c.historyEvent(tc.e, newFailureText())
		if (e.Failure != nil) != tc.withFailure || e.TimeoutType != tc.tout || (e.Failure != nil && e.Failure.Kind != tc.kind) {
			t.Errorf("case %d: event %+v, failure %+v", i, e, e.Failure)
		}
		if b, _ := json.Marshal(e); strings.Contains(string(b), temporaltest.CanaryPrefix) {
			t.Errorf("case %d: a detail was read: %s", i, b)
		}
	}
}

// TestWhichTimeoutRanOut: the rule read.WorkflowTimeout states.
func TestWhichTimeoutRanOut(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	info := func(lasted time.Duration) *workflowpb.WorkflowExecutionInfo {
		return &workflowpb.WorkflowExecutionInfo{StartTime: timestamppb.New(start), CloseTime: timestamppb.New(start.Add(lasted))}
	}
	cfg := func(exec, run time.Duration) *workflowpb.WorkflowExecutionConfig {
		c := &workflowpb.WorkflowExecutionConfig{}
		if exec > 0 {
			c.WorkflowExecutionTimeout = durationpb.New(exec)
		}
		if run > 0 {
			c.WorkflowRunTimeout = durationpb.New(run)
		}
		return c
	}
	for _, tc := range []struct {
		exec, run, lasted time.Duration
		want              string
	}{
		{time.Minute, time.Minute, time.Minute, "execution"}, // run defaulted to the execution timeout
		{time.Minute, 0, time.Minute, "execution"},
		{time.Hour, time.Minute, time.Minute, "run"},
		{time.Hour, time.Minute, 30 * time.Second, "execution"}, // an earlier run used the rest
		{0, time.Minute, time.Minute, "run"},
		{0, 0, time.Minute, "unknown"},
	} {
		if got := workflowTimeout(cfg(tc.exec, tc.run), info(tc.lasted), nil).Which; got != tc.want {
			t.Errorf("exec %v, run %v, lasted %v: %s, want %s", tc.exec, tc.run, tc.lasted, got, tc.want)
		}
	}
	// Where Temporal reports the expirations, they decide: a run that
	// closed at its run expiration, before the execution's, hit the run
	// timeout whatever the configured durations say.
	ext := &workflowpb.WorkflowExecutionExtendedInfo{
		ExecutionExpirationTime: timestamppb.New(start.Add(time.Hour)),
		RunExpirationTime:       timestamppb.New(start.Add(time.Minute)),
	}
	if got := workflowTimeout(cfg(time.Hour, time.Minute), info(time.Minute+time.Second), ext).Which; got != "run" {
		t.Errorf("closed past the run's expiration: %s", got)
	}
	ext.RunExpirationTime = timestamppb.New(start.Add(time.Hour))
	if got := workflowTimeout(cfg(time.Hour, time.Hour), info(time.Hour), ext).Which; got != "execution" {
		t.Errorf("closed at both expirations: %s", got)
	}
}

// TestPendingListsAreBounded: a workflow with more pending Nexus
// operations or callbacks than a description lists shows fifty and the
// count of the rest; operations' failures are summarised; a callback's
// URL, headers, failure message and blocked reason (which quote the URL)
// are never read, only that its last attempt failed.
func TestPendingListsAreBounded(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	ops := make([]*workflowpb.PendingNexusOperationInfo, 70)
	cbs := make([]*workflowpb.CallbackInfo, 51)
	for i := range ops {
		ops[i] = &workflowpb.PendingNexusOperationInfo{Endpoint: "ep", Service: "svc", Operation: "op", LastAttemptFailure: chain(1, "handler down")}
	}
	for i := range cbs {
		cbs[i] = &workflowpb.CallbackInfo{
			Callback: &commonpb.Callback{Variant: &commonpb.Callback_Nexus_{Nexus: &commonpb.Callback_Nexus{
				Url: "https://" + temporaltest.CanaryPrefix + "callback-url", Header: map[string]string{"x": temporaltest.CanaryPrefix + "callback-header"}}}},
			Trigger: &workflowpb.CallbackInfo_Trigger{Variant: &workflowpb.CallbackInfo_Trigger_WorkflowClosed{WorkflowClosed: &workflowpb.CallbackInfo_WorkflowClosed{}}},
			// What Temporal writes when the call fails: the HTTP client's
			// error, quoting the URL (found by review).
			LastAttemptFailure: &failurepb.Failure{Message: `Post "https://hooks.example/cb?access_token=` + temporaltest.CanaryPrefix + `callback-url-token": dial tcp: connection refused`},
			BlockedReason:      "circuit breaker open for https://hooks.example/cb?access_token=" + temporaltest.CanaryPrefix + "callback-blocked",
		}
	}
	text := newFailureText()
	gotOps, moreOps := listed(ops, func(p *workflowpb.PendingNexusOperationInfo) read.PendingNexusOperation {
		return c.pendingNexusOperation(p, text)
	})
	gotCbs, moreCbs := listed(cbs, c.callback)
	if len(gotOps) != read.MaxPendingListed || moreOps != 20 || len(gotCbs) != read.MaxPendingListed || moreCbs != 1 {
		t.Fatalf("listed %d (+%d) operations and %d (+%d) callbacks", len(gotOps), moreOps, len(gotCbs), moreCbs)
	}
	if f := gotOps[0].LastAttemptFailure; f == nil || len(f.Causes) != 1 || gotCbs[0].Trigger != "WorkflowClosed" || !gotCbs[0].LastAttemptFailed {
		t.Errorf("operation %+v, callback %+v", gotOps[0], gotCbs[0])
	}
	b, _ := json.Marshal([]any{gotOps, gotCbs})
	if strings.Contains(string(b), temporaltest.CanaryPrefix) {
		t.Fatalf("a callback's URL or header was read: %s", b)
	}
	if none, more := listed([]*workflowpb.CallbackInfo(nil), c.callback); none == nil || len(none) != 0 || more != 0 {
		t.Fatal("no callbacks must be an empty list, not an absent one")
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

// TestADeploymentsVersionsAreBounded: of a deployment with 70 versions,
// the current and the ramping come first, then the newest; 50 are listed
// and the rest counted. Only the first 10 get their task queues read
// (DescribeWorkerDeployment's loop stops there).
func TestADeploymentsVersionsAreBounded(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := make([]*deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary, 70)
	for i := range in {
		in[i] = &deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary{
			DeploymentVersion: &deploymentpb.WorkerDeploymentVersion{DeploymentName: "d", BuildId: fmt.Sprintf("b%02d", i)},
			Status:            enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED,
			DrainageStatus:    enumspb.VERSION_DRAINAGE_STATUS_DRAINED,
			CreateTime:        timestamppb.New(t0.Add(time.Duration(i) * time.Hour)),
		}
	}
	in[3].Status, in[60].Status = enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING, enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT
	vs, more := listedUpTo(routedFirst(in), read.MaxDeploymentVersions, c.deploymentVersion)
	if len(vs) != 50 || more != 20 || vs[0].BuildID != "b60" || vs[1].BuildID != "b03" || vs[2].BuildID != "b69" || vs[0].Status != "Current" || vs[2].DrainageStatus != "Drained" {
		t.Fatalf("versions %v…, %d more", vs[:3], more)
	}
}
