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

func ident(s string) string { return quote.EscapeIdentifier(s) }

func quoted(s string) quote.Text { return quote.Of(quote.OriginTemporal, s) }

func quotePtr(s string) *quote.Text {
	if s == "" {
		return nil
	}
	t := quoted(s)
	return &t
}

func enumName(e fmt.Stringer) string { return ident(e.String()) }

func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil || (ts.GetSeconds() == 0 && ts.GetNanos() == 0) {
		return nil
	}
	t := ts.AsTime().UTC()
	return &t
}

func workflowSummary(e *workflowpb.WorkflowExecutionInfo) read.WorkflowSummary {
	return read.WorkflowSummary{
		WorkflowID:       ident(e.GetExecution().GetWorkflowId()),
		RunID:            ident(e.GetExecution().GetRunId()),
		WorkflowType:     ident(e.GetType().GetName()),
		TaskQueue:        ident(e.GetTaskQueue()),
		Status:           read.WorkflowStatus(enumName(e.GetStatus())),
		StartTime:        timeOf(e.GetStartTime()),
		ExecutionTime:    timeOf(e.GetExecutionTime()),
		CloseTime:        timeOf(e.GetCloseTime()),
		HistoryLength:    e.GetHistoryLength(),
		ParentWorkflowID: ident(e.GetParentExecution().GetWorkflowId()),
		ParentRunID:      ident(e.GetParentExecution().GetRunId()),
	}
}

func pendingActivity(p *workflowpb.PendingActivityInfo) read.PendingActivity {
	// HeartbeatDetails is a payload and is never read.
	return read.PendingActivity{
		ActivityID:              ident(p.GetActivityId()),
		ActivityType:            ident(p.GetActivityType().GetName()),
		State:                   read.ActivityState(enumName(p.GetState())),
		Attempt:                 p.GetAttempt(),
		MaximumAttempts:         p.GetMaximumAttempts(),
		ScheduledTime:           timeOf(p.GetScheduledTime()),
		LastStartedTime:         timeOf(p.GetLastStartedTime()),
		LastHeartbeatTime:       timeOf(p.GetLastHeartbeatTime()),
		NextAttemptScheduleTime: timeOf(p.GetNextAttemptScheduleTime()),
		ExpirationTime:          timeOf(p.GetExpirationTime()),
		LastFailure:             failureSummary(p.GetLastFailure()),
		LastWorkerIdentity:      quotePtr(p.GetLastWorkerIdentity()),
		Paused:                  p.GetPaused(),
	}
}

// failureSummary keeps a failure's message, as quoted text, and its kind.
// Details (payloads), the stack trace, the encoded attributes and the cause
// chain are never read.
func failureSummary(f *failurepb.Failure) *read.FailureSummary {
	if f == nil {
		return nil
	}
	s := &read.FailureSummary{Message: quoted(f.GetMessage()), Kind: "unknown"}
	switch {
	case f.GetApplicationFailureInfo() != nil:
		s.Kind = "application"
		s.ApplicationErrorType = ident(f.GetApplicationFailureInfo().GetType())
		s.NonRetryable = f.GetApplicationFailureInfo().GetNonRetryable()
	case f.GetTimeoutFailureInfo() != nil:
		s.Kind = "timeout"
	case f.GetCanceledFailureInfo() != nil:
		s.Kind = "canceled"
	case f.GetTerminatedFailureInfo() != nil:
		s.Kind = "terminated"
	case f.GetServerFailureInfo() != nil:
		s.Kind = "server"
		s.NonRetryable = f.GetServerFailureInfo().GetNonRetryable()
	case f.GetActivityFailureInfo() != nil:
		s.Kind = "activity"
	case f.GetChildWorkflowExecutionFailureInfo() != nil:
		s.Kind = "child workflow"
	}
	return s
}

// historyEvent keeps an event's id, type and time and the identifiers that
// say what it concerns. Attributes that carry payloads (inputs, results,
// details, headers, memo, markers) or free text (failures, reasons) are
// never read.
func historyEvent(e *historypb.HistoryEvent) read.HistoryEvent {
	out := read.HistoryEvent{
		EventID:   e.GetEventId(),
		EventType: enumName(e.GetEventType()),
	}
	if t := timeOf(e.GetEventTime()); t != nil {
		out.EventTime = *t
	}
	switch {
	case e.GetActivityTaskScheduledEventAttributes() != nil:
		a := e.GetActivityTaskScheduledEventAttributes()
		out.ActivityID = ident(a.GetActivityId())
		out.ActivityType = ident(a.GetActivityType().GetName())
	case e.GetActivityTaskStartedEventAttributes() != nil:
		a := e.GetActivityTaskStartedEventAttributes()
		out.ScheduledEventID = a.GetScheduledEventId()
		out.Attempt = a.GetAttempt()
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskFailedEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskTimedOutEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskCancelRequestedEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskCanceledEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
	case e.GetTimerStartedEventAttributes() != nil:
		out.TimerID = ident(e.GetTimerStartedEventAttributes().GetTimerId())
	case e.GetTimerFiredEventAttributes() != nil:
		out.TimerID = ident(e.GetTimerFiredEventAttributes().GetTimerId())
	case e.GetTimerCanceledEventAttributes() != nil:
		out.TimerID = ident(e.GetTimerCanceledEventAttributes().GetTimerId())
	case e.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil:
		a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
		out.ChildWorkflowID = ident(a.GetWorkflowId())
		out.ChildWorkflowType = ident(a.GetWorkflowType().GetName())
	case e.GetChildWorkflowExecutionStartedEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionStartedEventAttributes()
		out.ChildWorkflowID = ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = ident(a.GetWorkflowType().GetName())
	case e.GetChildWorkflowExecutionCompletedEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionCompletedEventAttributes()
		out.ChildWorkflowID = ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = ident(a.GetWorkflowType().GetName())
	case e.GetChildWorkflowExecutionFailedEventAttributes() != nil:
		a := e.GetChildWorkflowExecutionFailedEventAttributes()
		out.ChildWorkflowID = ident(a.GetWorkflowExecution().GetWorkflowId())
		out.ChildWorkflowType = ident(a.GetWorkflowType().GetName())
	case e.GetWorkflowExecutionStartedEventAttributes() != nil:
		a := e.GetWorkflowExecutionStartedEventAttributes()
		out.Attempt = a.GetAttempt()
	}
	return out
}

func scheduleActions(rs []*schedulepb.ScheduleActionResult) []read.ScheduleAction {
	out := make([]read.ScheduleAction, 0, len(rs))
	for _, r := range rs {
		out = append(out, read.ScheduleAction{
			ScheduleTime: timeOf(r.GetScheduleTime()),
			ActualTime:   timeOf(r.GetActualTime()),
			WorkflowID:   ident(r.GetStartWorkflowResult().GetWorkflowId()),
			RunID:        ident(r.GetStartWorkflowResult().GetRunId()),
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

func scheduleSummary(s *schedulepb.ScheduleListEntry) read.ScheduleSummary {
	// Memo and SearchAttributes of the entry are never read.
	info := s.GetInfo()
	return read.ScheduleSummary{
		ScheduleID:      ident(s.GetScheduleId()),
		WorkflowType:    ident(info.GetWorkflowType().GetName()),
		Paused:          info.GetPaused(),
		Notes:           quotePtr(info.GetNotes()),
		RecentActions:   scheduleActions(info.GetRecentActions()),
		NextActionTimes: times(info.GetFutureActionTimes()),
	}
}

func scheduleDescription(obs read.Observation, id string, resp *workflowservice.DescribeScheduleResponse) *read.ScheduleDescription {
	sched := resp.GetSchedule()
	spec := sched.GetSpec()
	// Of the action, only the workflow's id, type and task queue are read:
	// its input, memo, headers, search attributes and user metadata are
	// payloads.
	start := sched.GetAction().GetStartWorkflow()
	info := resp.GetInfo()
	out := &read.ScheduleDescription{
		Observation:          obs,
		ScheduleID:           ident(id),
		WorkflowType:         ident(start.GetWorkflowType().GetName()),
		WorkflowIDPrefix:     ident(start.GetWorkflowId()),
		TaskQueue:            ident(start.GetTaskQueue().GetName()),
		Paused:               sched.GetState().GetPaused(),
		Notes:                quotePtr(sched.GetState().GetNotes()),
		Intervals:            make([]read.ScheduleInterval, 0, len(spec.GetInterval())),
		CronExpressions:      make([]string, 0, len(spec.GetCronString())),
		CalendarCount:        len(spec.GetCalendar()) + len(spec.GetStructuredCalendar()),
		CatchupWindowSeconds: sched.GetPolicies().GetCatchupWindow().AsDuration().Seconds(),
		ActionCount:          info.GetActionCount(),
		MissedCatchupWindow:  info.GetMissedCatchupWindow(),
		OverlapSkipped:       info.GetOverlapSkipped(),
		RunningWorkflows:     make([]read.ScheduleAction, 0, len(info.GetRunningWorkflows())),
		RecentActions:        scheduleActions(info.GetRecentActions()),
		NextActionTimes:      times(info.GetFutureActionTimes()),
		CreateTime:           timeOf(info.GetCreateTime()),
		UpdateTime:           timeOf(info.GetUpdateTime()),
	}
	if p := sched.GetPolicies().GetOverlapPolicy(); p != enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
		out.OverlapPolicy = enumName(p)
	}
	for _, iv := range spec.GetInterval() {
		out.Intervals = append(out.Intervals, read.ScheduleInterval{
			EverySeconds:  iv.GetInterval().AsDuration().Seconds(),
			OffsetSeconds: iv.GetPhase().AsDuration().Seconds(),
		})
	}
	for _, c := range spec.GetCronString() {
		out.CronExpressions = append(out.CronExpressions, ident(c))
	}
	for _, w := range info.GetRunningWorkflows() {
		out.RunningWorkflows = append(out.RunningWorkflows, read.ScheduleAction{WorkflowID: ident(w.GetWorkflowId()), RunID: ident(w.GetRunId())})
	}
	return out
}
