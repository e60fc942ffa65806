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

func (c conv) pendingActivity(p *workflowpb.PendingActivityInfo) read.PendingActivity {
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
		LastFailure:             c.failureSummary(p.GetLastFailure()),
		LastWorkerIdentity:      c.quotePtr(p.GetLastWorkerIdentity()),
		Paused:                  p.GetPaused(),
	}
}

// failureSummary keeps a failure's message, as quoted text, and its kind.
// Details (payloads), the stack trace, the encoded attributes and the cause
// chain are never read.
func (c conv) failureSummary(f *failurepb.Failure) *read.FailureSummary {
	if f == nil {
		return nil
	}
	s := &read.FailureSummary{Message: c.quoted(f.GetMessage()), Kind: "unknown"}
	switch {
	case f.GetApplicationFailureInfo() != nil:
		s.Kind = "application"
		s.ApplicationErrorType = c.ident(f.GetApplicationFailureInfo().GetType())
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
func (c conv) historyEvent(e *historypb.HistoryEvent) read.HistoryEvent {
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
		out.ScheduledEventID = e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskTimedOutEventAttributes() != nil:
		out.ScheduledEventID = e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
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
