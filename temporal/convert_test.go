package temporal

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
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

// TestAHistoryPageOfFailuresIsBounded: the worst case the page size
// allows, 500 events each failing with a 1 KiB message and five causes of
// 1 KiB, holds at most read.MaxPageFailureText of failure text, says where
// it left messages out, and marshals to under 256 KiB (3.5 MiB of messages
// without the bound).
func TestAHistoryPageOfFailuresIsBounded(t *testing.T) {
	t.Parallel()
	c := conv{q: quote.New(nil)}
	text := &failureText{left: read.MaxPageFailureText}
	msg := strings.Repeat("why ", 256)
	events := make([]read.HistoryEvent, 0, 500)
	for i := range 500 {
		events = append(events, c.historyEvent(&historypb.HistoryEvent{EventId: int64(i + 1), EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED,
			Attributes: &historypb.HistoryEvent_ActivityTaskFailedEventAttributes{ActivityTaskFailedEventAttributes: &historypb.ActivityTaskFailedEventAttributes{
				Failure: chain(5, msg), ScheduledEventId: 5}}}, text))
	}
	quoted, omitted := 0, 0
	for _, e := range events {
		for _, f := range append([]read.Failure{e.Failure.Failure}, e.Failure.Causes...) {
			if f.Message.Origin == quote.OriginPorthole {
				omitted++
			} else {
				quoted += len(f.Message.Text)
			}
		}
	}
	b, _ := json.Marshal(read.History{Events: events})
	if quoted > read.MaxPageFailureText || omitted == 0 || len(b) > 256<<10 {
		t.Fatalf("quoted %d bytes of failure text, left out %d messages, page of %d bytes", quoted, omitted, len(b))
	}
	t.Logf("the worst page: %d bytes of failure text, %d messages left out, %d bytes of JSON", quoted, omitted, len(b))
	if first := events[0].Failure.Message; first.Origin != "porthole-quoting-temporal" || len(first.Text) < 1000 {
		t.Errorf("the page's first failure was not read whole: %+v", first)
	}
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
		e := c.historyEvent(tc.e, &failureText{left: read.MaxPageFailureText})
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
		if got := workflowTimeout(cfg(tc.exec, tc.run), info(tc.lasted)).Which; got != tc.want {
			t.Errorf("exec %v, run %v, lasted %v: %s, want %s", tc.exec, tc.run, tc.lasted, got, tc.want)
		}
	}
}

// TestPendingListsAreBounded: a workflow with more pending Nexus
// operations or callbacks than a description lists shows fifty and the
// count of the rest; their failures are summarised, their URLs and
// headers never read.
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
		}
	}
	gotOps, moreOps := listed(ops, c.pendingNexusOperation)
	gotCbs, moreCbs := listed(cbs, c.callback)
	if len(gotOps) != read.MaxPendingListed || moreOps != 20 || len(gotCbs) != read.MaxPendingListed || moreCbs != 1 {
		t.Fatalf("listed %d (+%d) operations and %d (+%d) callbacks", len(gotOps), moreOps, len(gotCbs), moreCbs)
	}
	if f := gotOps[0].LastAttemptFailure; f == nil || len(f.Causes) != 1 || gotCbs[0].Trigger != "WorkflowClosed" {
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
