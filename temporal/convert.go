package temporal

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	schedulepb "go.temporal.io/api/schedule/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// Every function here copies named fields only. None touches a field of type
// Payload, Payloads, Memo, Header, SearchAttributes or UserMetadata, nor a
// failure's details or stack trace: that is the rule this file keeps, and
// the reason it builds results field by field instead of converting whole
// messages.

// conv converts Temporal's messages into porthole's result types, quoting
// and escaping what somebody else wrote with a quoter that redacts before
// it cuts.
type conv struct{ q quote.Quoter }

func (c conv) ident(s string) string { return c.q.EscapeIdentifier(s) }

func (c conv) quoted(s string) quote.Text { return c.q.Of(quote.OriginTemporal, s) }

func (c conv) quotePtr(s string) *quote.Text {
	if s == "" {
		return nil
	}
	t := c.quoted(s)
	return &t
}

func (c conv) enumName(e fmt.Stringer) string { return c.ident(e.String()) }

func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil || (ts.GetSeconds() == 0 && ts.GetNanos() == 0) {
		return nil
	}
	t := ts.AsTime().UTC()
	return &t
}

func (c conv) workflowSummary(e *workflowpb.WorkflowExecutionInfo) read.WorkflowSummary {
	return read.WorkflowSummary{
		WorkflowID:       c.ident(e.GetExecution().GetWorkflowId()),
		RunID:            c.ident(e.GetExecution().GetRunId()),
		WorkflowType:     c.ident(e.GetType().GetName()),
		TaskQueue:        c.ident(e.GetTaskQueue()),
		Status:           read.WorkflowStatus(c.enumName(e.GetStatus())),
		StartTime:        timeOf(e.GetStartTime()),
		ExecutionTime:    timeOf(e.GetExecutionTime()),
		CloseTime:        timeOf(e.GetCloseTime()),
		HistoryLength:    e.GetHistoryLength(),
		ParentWorkflowID: c.ident(e.GetParentExecution().GetWorkflowId()),
		ParentRunID:      c.ident(e.GetParentExecution().GetRunId()),
	}
}

func (c conv) pendingActivity(p *workflowpb.PendingActivityInfo, text *failureText) read.PendingActivity {
	// HeartbeatDetails is a payload and is never read.
	return read.PendingActivity{
		ActivityID:              c.ident(p.GetActivityId()),
		ActivityType:            c.ident(p.GetActivityType().GetName()),
		State:                   read.ActivityState(c.enumName(p.GetState())),
		Attempt:                 p.GetAttempt(),
		MaximumAttempts:         p.GetMaximumAttempts(),
		ScheduledTime:           timeOf(p.GetScheduledTime()),
		LastStartedTime:         timeOf(p.GetLastStartedTime()),
		LastHeartbeatTime:       timeOf(p.GetLastHeartbeatTime()),
		NextAttemptScheduleTime: timeOf(p.GetNextAttemptScheduleTime()),
		ExpirationTime:          timeOf(p.GetExpirationTime()),
		LastFailure:             c.failureWithin(p.GetLastFailure(), text),
		LastWorkerIdentity:      c.quotePtr(p.GetLastWorkerIdentity()),
		Paused:                  p.GetPaused(),
	}
}

// listed converts at most read.MaxPendingListed of in and counts the
// rest.
func listed[T, R any](in []T, conv func(T) R) ([]R, int) {
	return listedUpTo(in, read.MaxPendingListed, conv)
}

// listedUpTo converts at most max of in and counts the rest.
func listedUpTo[T, R any](in []T, max int, conv func(T) R) ([]R, int) {
	n := min(len(in), max)
	out := make([]R, 0, n)
	for _, v := range in[:n] {
		out = append(out, conv(v))
	}
	return out, len(in) - n
}

// pendingNexusOperation keeps a pending Nexus operation's names, state,
// attempts, last failure and blocked reason. Its operation token,
// cancellation details and the input and headers it was scheduled with are
// never read. The last failure's message is Temporal's words about the
// handler's answer, and can quote the endpoint's target (docs/disclosure.md).
func (c conv) pendingNexusOperation(p *workflowpb.PendingNexusOperationInfo, text *failureText) read.PendingNexusOperation {
	return read.PendingNexusOperation{
		Endpoint:                c.ident(p.GetEndpoint()),
		Service:                 c.ident(p.GetService()),
		Operation:               c.ident(p.GetOperation()),
		State:                   c.enumName(p.GetState()),
		ScheduledEventID:        p.GetScheduledEventId(),
		ScheduledTime:           timeOf(p.GetScheduledTime()),
		Attempt:                 p.GetAttempt(),
		LastAttemptCompleteTime: timeOf(p.GetLastAttemptCompleteTime()),
		NextAttemptScheduleTime: timeOf(p.GetNextAttemptScheduleTime()),
		LastAttemptFailure:      c.failureWithin(p.GetLastAttemptFailure(), text),
		BlockedReason:           c.quotePtr(p.GetBlockedReason()),
	}
}

// callback keeps a callback's trigger, state, attempts and times. What it
// calls (a URL and its headers) is never read, and neither is its last
// failure or blocked reason: Temporal writes the HTTP client's error there,
// which quotes the whole URL, query included (a callback
// URL's access token reached the client).
func (c conv) callback(cb *workflowpb.CallbackInfo) read.Callback {
	trigger := "unknown"
	if cb.GetTrigger().GetWorkflowClosed() != nil {
		trigger = "WorkflowClosed"
	}
	return read.Callback{
		Trigger:                 trigger,
		State:                   c.enumName(cb.GetState()),
		RegistrationTime:        timeOf(cb.GetRegistrationTime()),
		Attempt:                 cb.GetAttempt(),
		LastAttemptCompleteTime: timeOf(cb.GetLastAttemptCompleteTime()),
		NextAttemptScheduleTime: timeOf(cb.GetNextAttemptScheduleTime()),
		LastAttemptFailed:       cb.GetLastAttemptFailure() != nil,
	}
}

// failureText is what an answer (a history page, a workflow's description)
// has left of its failure text, read.MaxFailureText: each failure read is
// charged its strings as JSON writes them and failureOverhead. Once it is
// spent, failures are counted in leftOut, not read.
type failureText struct{ left, leftOut int }

func newFailureText() *failureText { return &failureText{left: read.MaxFailureText} }

// failureOverhead is what a failure summary costs an answer besides its
// strings: its keys, origin and flags, as JSON.
const failureOverhead = 128

// minFailureText is the least room a failure is read in.
const minFailureText = 64

func (t *failureText) spent() bool { return t.left < minFailureText }

// jsonLen is how many bytes s, a cleaned string (valid UTF-8: invalid
// bytes were replaced), takes as a JSON string's contents, escaped as
// encoding/json escapes it by default (the most).
func jsonLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '<' || b == '>' || b == '&' || b < 0x20:
			n += 5
		case b == '"' || b == '\\':
			n++
		case b == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9):
			n += 3 // U+2028, U+2029: three bytes become six
		}
	}
	return n
}

// failureWithin keeps a failure's message, as quoted text, its kind, and
// the same of each cause, at most read.MaxFailureCauses deep, within what
// the answer's failure text has left: nil, and counted, once it is spent.
// Details (payloads), stack traces and encoded attributes are never read,
// at any depth.
func (c conv) failureWithin(f *failurepb.Failure, text *failureText) *read.FailureSummary {
	if f == nil {
		return nil
	}
	if text.spent() {
		text.leftOut++
		return nil
	}
	s := &read.FailureSummary{Failure: c.failure(f, text)}
	for cause := f.GetCause(); cause != nil; cause = cause.GetCause() {
		// Past the answer's failure text, causes are counted, not read.
		if len(s.Causes) == read.MaxFailureCauses || text.spent() {
			s.MoreCauses++
			continue
		}
		s.Causes = append(s.Causes, c.failure(cause, text))
	}
	return s
}

// failure is one failure of a chain, without its cause, charged to text.
func (c conv) failure(f *failurepb.Failure, text *failureText) read.Failure {
	s := read.Failure{Kind: "unknown"}
	switch {
	case f.GetApplicationFailureInfo() != nil:
		s.Kind = "application"
		s.ApplicationErrorType = c.ident(f.GetApplicationFailureInfo().GetType())
		s.NonRetryable = f.GetApplicationFailureInfo().GetNonRetryable()
	case f.GetTimeoutFailureInfo() != nil:
		s.Kind = "timeout"
		s.TimeoutType = c.timeoutType(f.GetTimeoutFailureInfo().GetTimeoutType())
	case f.GetCanceledFailureInfo() != nil:
		s.Kind = "canceled"
	case f.GetTerminatedFailureInfo() != nil:
		s.Kind = "terminated"
	case f.GetServerFailureInfo() != nil:
		s.Kind = "server"
		s.NonRetryable = f.GetServerFailureInfo().GetNonRetryable()
	case f.GetResetWorkflowFailureInfo() != nil:
		s.Kind = "reset workflow"
	case f.GetActivityFailureInfo() != nil:
		s.Kind = "activity"
	case f.GetChildWorkflowExecutionFailureInfo() != nil:
		s.Kind = "child workflow"
	case f.GetNexusOperationExecutionFailureInfo() != nil:
		s.Kind = "nexus operation"
	case f.GetNexusHandlerFailureInfo() != nil:
		s.Kind = "nexus handler"
	}
	text.left -= failureOverhead + jsonLen(s.ApplicationErrorType)
	s.Message = c.q.OfUpTo(quote.OriginTemporal, f.GetMessage(), min(quote.MaxQuotedLen, max(text.left, minFailureText)))
	text.left -= jsonLen(s.Message.Text)
	return s
}

func (c conv) timeoutType(t enumspb.TimeoutType) string {
	if t == enumspb.TIMEOUT_TYPE_UNSPECIFIED {
		return ""
	}
	return c.enumName(t)
}

// workflowTimeout tells which timeout of a timed-out workflow ran out
// (read.WorkflowTimeout says how): from the expiration times Temporal
// reports when it does, else from the configured timeouts.
func workflowTimeout(cfg *workflowpb.WorkflowExecutionConfig, info *workflowpb.WorkflowExecutionInfo, ext *workflowpb.WorkflowExecutionExtendedInfo) *read.WorkflowTimeout {
	exec, run := cfg.GetWorkflowExecutionTimeout().AsDuration(), cfg.GetWorkflowRunTimeout().AsDuration()
	out := &read.WorkflowTimeout{Which: "unknown", ExecutionTimeoutSeconds: exec.Seconds(), RunTimeoutSeconds: run.Seconds()}
	closed := info.GetCloseTime().AsTime()
	lasted := closed.Sub(info.GetStartTime().AsTime())
	expired := func(at *timestamppb.Timestamp) bool { return timeOf(at) != nil && !closed.Before(at.AsTime()) }
	switch {
	case expired(ext.GetExecutionExpirationTime()):
		out.Which = "execution"
	case expired(ext.GetRunExpirationTime()):
		out.Which = "run"
	case exec > 0 && (run == 0 || run >= exec):
		out.Which = "execution"
	case run > 0 && lasted >= run:
		out.Which = "run"
	case exec > 0:
		out.Which = "execution"
	case run > 0:
		out.Which = "run"
	}
	return out
}

// historyEvent keeps an event's id, type and time, the identifiers that
// say what it concerns, and the failure summary of a failure or timeout
// event, within the page's failure text. Attributes that carry payloads
// (inputs, results, details, headers, memo, markers) or other free text
// (reasons, identities) are never read.
//
// Whole: a switch over Temporal's event types, one case each.
func (c conv) historyEvent(e *historypb.HistoryEvent, text *failureText) read.HistoryEvent {
	out := read.HistoryEvent{
		EventID:   e.GetEventId(),
		EventType: c.enumName(e.GetEventType()),
	}
	if t := timeOf(e.GetEventTime()); t != nil {
		out.EventTime = *t
	}
	switch {
	case e.GetActivityTaskScheduledEventAttributes() != nil:
		a := e.GetActivityTaskScheduledEventAttributes()
		out.ActivityID = c.ident(a.GetActivityId())
		out.ActivityType = c.ident(a.GetActivityType().GetName())
	case e.GetActivityTaskStartedEventAttributes() != nil:
		a := e.GetActivityTaskStartedEventAttributes()
		out.ScheduledEventID = a.GetScheduledEventId()
		out.Attempt = a.GetAttempt()
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskFailedEventAttributes() != nil:
		a := e.GetActivityTaskFailedEventAttributes()
		out.ScheduledEventID = a.GetScheduledEventId()
		out.Failure = c.failureWithin(a.GetFailure(), text)
	case e.GetActivityTaskTimedOutEventAttributes() != nil:
		a := e.GetActivityTaskTimedOutEventAttributes()
		out.ScheduledEventID = a.GetScheduledEventId()
		out.Failure = c.failureWithin(a.GetFailure(), text)
		out.TimeoutType = c.timeoutType(a.GetFailure().GetTimeoutFailureInfo().GetTimeoutType())
	case e.GetWorkflowTaskFailedEventAttributes() != nil:
		out.Failure = c.failureWithin(e.GetWorkflowTaskFailedEventAttributes().GetFailure(), text)
	case e.GetWorkflowTaskTimedOutEventAttributes() != nil:
		out.TimeoutType = c.timeoutType(e.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType())
	case e.GetWorkflowExecutionFailedEventAttributes() != nil:
		out.Failure = c.failureWithin(e.GetWorkflowExecutionFailedEventAttributes().GetFailure(), text)
	case e.GetNexusOperationFailedEventAttributes() != nil:
		out.Failure = c.failureWithin(e.GetNexusOperationFailedEventAttributes().GetFailure(), text)
	case e.GetNexusOperationTimedOutEventAttributes() != nil:
		a := e.GetNexusOperationTimedOutEventAttributes()
		out.Failure = c.failureWithin(a.GetFailure(), text)
		out.TimeoutType = c.timeoutType(a.GetFailure().GetTimeoutFailureInfo().GetTimeoutType())
	case e.GetActivityTaskCancelRequestedEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskCanceledEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
	case e.GetTimerStartedEventAttributes() != nil:
		out.TimerID = c.ident(e.GetTimerStartedEventAttributes().GetTimerId())
	case e.GetTimerFiredEventAttributes() != nil:
		out.TimerID = c.ident(e.GetTimerFiredEventAttributes().GetTimerId())
	case e.GetTimerCanceledEventAttributes() != nil:
		out.TimerID = c.ident(e.GetTimerCanceledEventAttributes().GetTimerId())
	case e.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil:
		a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
		out.ChildWorkflowID = c.ident(a.GetWorkflowId())
		out.ChildWorkflowType = c.ident(a.GetWorkflowType().GetName())
	case e.GetChildWorkflowExecutionStartedEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionStartedEventAttributes()
		out.ChildWorkflowID = c.ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = c.ident(a.GetWorkflowType().GetName())
	case e.GetChildWorkflowExecutionCompletedEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionCompletedEventAttributes()
		out.ChildWorkflowID = c.ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = c.ident(a.GetWorkflowType().GetName())
	case e.GetChildWorkflowExecutionFailedEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionFailedEventAttributes()
		out.ChildWorkflowID = c.ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = c.ident(a.GetWorkflowType().GetName())
		out.Failure = c.failureWithin(a.GetFailure(), text)
	case e.GetChildWorkflowExecutionTimedOutEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionTimedOutEventAttributes()
		out.ChildWorkflowID = c.ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = c.ident(a.GetWorkflowType().GetName())
	case e.GetWorkflowExecutionStartedEventAttributes() != nil:
		a := e.GetWorkflowExecutionStartedEventAttributes()
		out.Attempt = a.GetAttempt()
	}
	return out
}

func (c conv) scheduleActions(rs []*schedulepb.ScheduleActionResult) []read.ScheduleAction {
	out := make([]read.ScheduleAction, 0, len(rs))
	for _, r := range rs {
		out = append(out, read.ScheduleAction{
			ScheduleTime: timeOf(r.GetScheduleTime()),
			ActualTime:   timeOf(r.GetActualTime()),
			WorkflowID:   c.ident(r.GetStartWorkflowResult().GetWorkflowId()),
			RunID:        c.ident(r.GetStartWorkflowResult().GetRunId()),
		})
	}
	return out
}

func times(ts []*timestamppb.Timestamp) []time.Time {
	out := make([]time.Time, 0, len(ts))
	for _, t := range ts {
		if tt := timeOf(t); tt != nil {
			out = append(out, *tt)
		}
	}
	return out
}

func (c conv) scheduleSummary(s *schedulepb.ScheduleListEntry) read.ScheduleSummary {
	// Memo and SearchAttributes of the entry are never read.
	info := s.GetInfo()
	return read.ScheduleSummary{
		ScheduleID:      c.ident(s.GetScheduleId()),
		WorkflowType:    c.ident(info.GetWorkflowType().GetName()),
		Paused:          info.GetPaused(),
		Notes:           c.quotePtr(info.GetNotes()),
		RecentActions:   c.scheduleActions(info.GetRecentActions()),
		NextActionTimes: times(info.GetFutureActionTimes()),
	}
}

func (c conv) scheduleDescription(obs read.Observation, id string, resp *workflowservice.DescribeScheduleResponse) *read.ScheduleDescription {
	sched := resp.GetSchedule()
	spec := sched.GetSpec()
	// Of the action, only the workflow's id, type and task queue are read:
	// its input, memo, headers, search attributes and user metadata are
	// payloads.
	start := sched.GetAction().GetStartWorkflow()
	info := resp.GetInfo()
	out := &read.ScheduleDescription{
		Observation:          obs,
		ScheduleID:           c.ident(id),
		WorkflowType:         c.ident(start.GetWorkflowType().GetName()),
		WorkflowIDPrefix:     c.ident(start.GetWorkflowId()),
		TaskQueue:            c.ident(start.GetTaskQueue().GetName()),
		Paused:               sched.GetState().GetPaused(),
		Notes:                c.quotePtr(sched.GetState().GetNotes()),
		Intervals:            make([]read.ScheduleInterval, 0, len(spec.GetInterval())),
		CronExpressions:      make([]string, 0, len(spec.GetCronString())),
		CalendarCount:        len(spec.GetCalendar()) + len(spec.GetStructuredCalendar()),
		CatchupWindowSeconds: sched.GetPolicies().GetCatchupWindow().AsDuration().Seconds(),
		ActionCount:          info.GetActionCount(),
		MissedCatchupWindow:  info.GetMissedCatchupWindow(),
		OverlapSkipped:       info.GetOverlapSkipped(),
		RunningWorkflows:     make([]read.ScheduleAction, 0, len(info.GetRunningWorkflows())),
		RecentActions:        c.scheduleActions(info.GetRecentActions()),
		NextActionTimes:      times(info.GetFutureActionTimes()),
		CreateTime:           timeOf(info.GetCreateTime()),
		UpdateTime:           timeOf(info.GetUpdateTime()),
	}
	if p := sched.GetPolicies().GetOverlapPolicy(); p != enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
		out.OverlapPolicy = c.enumName(p)
	}
	for _, iv := range spec.GetInterval() {
		out.Intervals = append(out.Intervals, read.ScheduleInterval{
			EverySeconds:  iv.GetInterval().AsDuration().Seconds(),
			OffsetSeconds: iv.GetPhase().AsDuration().Seconds(),
		})
	}
	for _, cron := range spec.GetCronString() {
		out.CronExpressions = append(out.CronExpressions, c.ident(cron))
	}
	for _, w := range info.GetRunningWorkflows() {
		out.RunningWorkflows = append(out.RunningWorkflows, read.ScheduleAction{WorkflowID: c.ident(w.GetWorkflowId()), RunID: c.ident(w.GetRunId())})
	}
	return out
}
