package temporal

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/temporal/read"
)

// maxPageTokenLen bounds a page token a client hands back. Temporal's own
// tokens are far smaller; a longer one is not ours.
const maxPageTokenLen = 4096

// Adapter is the read-only [read.Reader] over one namespace. It keeps the SDK
// client to itself.
type Adapter struct {
	client        client.Client
	namespace     string
	serverVersion string
	now           func() time.Time
	conv          conv
}

var _ read.Reader = (*Adapter)(nil)

// Close closes the connection to Temporal.
func (a *Adapter) Close() { a.client.Close() }

// Namespace is the namespace every request is pinned to.
func (a *Adapter) Namespace() string { return a.namespace }

func (a *Adapter) observe() read.Observation {
	return read.Observation{Namespace: a.namespace, ObservedAt: a.now().UTC()}
}

// Ping asks for the namespace, the cheapest read that proves the connection
// and the namespace both still answer.
func (a *Adapter) Ping(ctx context.Context) error {
	_, err := a.client.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: a.namespace})
	return classify(err)
}

func (a *Adapter) ListWorkflows(ctx context.Context, req read.ListWorkflowsRequest) (*read.WorkflowList, error) {
	token, err := decodePageToken(req.NextPageToken)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace:     a.namespace,
		PageSize:      int32(req.PageSize),
		NextPageToken: token,
		Query:         req.Query,
	})
	if err != nil {
		return nil, classify(err)
	}
	out := &read.WorkflowList{
		Observation:   a.observe(),
		Workflows:     make([]read.WorkflowSummary, 0, len(resp.GetExecutions())),
		NextPageToken: encodePageToken(resp.GetNextPageToken()),
	}
	for _, e := range resp.GetExecutions() {
		out.Workflows = append(out.Workflows, a.conv.workflowSummary(e))
	}
	return out, nil
}

func (a *Adapter) CountWorkflows(ctx context.Context, req read.CountWorkflowsRequest) (*read.WorkflowCount, error) {
	resp, err := a.client.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: a.namespace,
		Query:     req.Query,
	})
	if err != nil {
		return nil, classify(err)
	}
	// Groups (GROUP BY) carry search-attribute values and are never read.
	return &read.WorkflowCount{Observation: a.observe(), Count: resp.GetCount()}, nil
}

func (a *Adapter) DescribeWorkflow(ctx context.Context, ref read.WorkflowRef) (*read.WorkflowDescription, error) {
	resp, err := a.client.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: a.namespace,
		Execution: &commonpb.WorkflowExecution{WorkflowId: ref.WorkflowID, RunId: ref.RunID},
	})
	if err != nil {
		return nil, classify(err)
	}
	info := resp.GetWorkflowExecutionInfo()
	if hidden(info.GetSearchAttributes()) {
		return nil, fmt.Errorf("%w: %q", read.ErrHidden, ref.WorkflowID)
	}
	out := &read.WorkflowDescription{
		Observation:              a.observe(),
		Workflow:                 a.conv.workflowSummary(info),
		ExecutionDurationSeconds: info.GetExecutionDuration().AsDuration().Seconds(),
		PendingActivities:        make([]read.PendingActivity, 0, len(resp.GetPendingActivities())),
		PendingChildren:          make([]read.PendingChild, 0, len(resp.GetPendingChildren())),
	}
	// The description's failures (pending activities', pending Nexus
	// operations', the close failure) share one failure text: a workflow
	// with two thousand failing activities costs a bounded answer.
	text := newFailureText()
	for _, p := range resp.GetPendingActivities() {
		out.PendingActivities = append(out.PendingActivities, a.conv.pendingActivity(p, text))
	}
	for _, c := range resp.GetPendingChildren() {
		out.PendingChildren = append(out.PendingChildren, read.PendingChild{
			WorkflowID:   a.conv.ident(c.GetWorkflowId()),
			RunID:        a.conv.ident(c.GetRunId()),
			WorkflowType: a.conv.ident(c.GetWorkflowTypeName()),
			InitiatedID:  c.GetInitiatedId(),
		})
	}
	out.PendingNexusOperations, out.MorePendingNexusOperations = listed(resp.GetPendingNexusOperations(),
		func(p *workflowpb.PendingNexusOperationInfo) read.PendingNexusOperation {
			return a.conv.pendingNexusOperation(p, text)
		})
	out.Callbacks, out.MoreCallbacks = listed(resp.GetCallbacks(), a.conv.callback)
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		// The failure is not on the description: it is read from the
		// close event of this very run.
		if out.CloseFailure, err = a.closeFailure(ctx, info.GetExecution(), text); err != nil {
			return nil, err
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		out.TimedOut = workflowTimeout(resp.GetExecutionConfig(), info, resp.GetWorkflowExtendedInfo())
	}
	out.FailuresLeftOut = text.leftOut
	return out, nil
}

// closeFailure is the failure a failed run closed with, read from its close
// event alone. A failed run without one is a fault, not an empty answer.
func (a *Adapter) closeFailure(ctx context.Context, run *commonpb.WorkflowExecution, text *failureText) (*read.FailureSummary, error) {
	resp, err := a.client.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace:              a.namespace,
		Execution:              &commonpb.WorkflowExecution{WorkflowId: run.GetWorkflowId(), RunId: run.GetRunId()},
		HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
	})
	if err != nil {
		return nil, classify(err)
	}
	for _, e := range resp.GetHistory().GetEvents() {
		if f := e.GetWorkflowExecutionFailedEventAttributes(); f != nil {
			return a.conv.failureWithin(f.GetFailure(), text), nil
		}
	}
	return nil, fmt.Errorf("%w: the failed workflow's close event was not in its history", read.ErrUnavailable)
}

func (a *Adapter) GetWorkflowHistory(ctx context.Context, req read.HistoryRequest) (*read.History, error) {
	token, err := decodePageToken(req.NextPageToken)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace:              a.namespace,
		Execution:              &commonpb.WorkflowExecution{WorkflowId: req.WorkflowID, RunId: req.RunID},
		MaximumPageSize:        int32(req.PageSize),
		NextPageToken:          token,
		HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
	})
	if err != nil {
		return nil, classify(err)
	}
	events := resp.GetHistory().GetEvents()
	// The first page starts with the started event, whose search
	// attributes say whether the workflow is hidden; a later page is read
	// only with a token porthole sealed for this workflow's first.
	if token == nil && len(events) > 0 && hidden(events[0].GetWorkflowExecutionStartedEventAttributes().GetSearchAttributes()) {
		return nil, fmt.Errorf("%w: %q", read.ErrHidden, req.WorkflowID)
	}
	out := &read.History{
		Observation:   a.observe(),
		WorkflowID:    a.conv.ident(req.WorkflowID),
		RunID:         a.conv.ident(req.RunID),
		Events:        make([]read.HistoryEvent, 0, len(events)),
		NextPageToken: encodePageToken(resp.GetNextPageToken()),
	}
	text := newFailureText()
	for _, e := range events {
		out.Events = append(out.Events, a.conv.historyEvent(e, text))
	}
	out.FailuresLeftOut = text.leftOut
	return out, nil
}

func (a *Adapter) DescribeTaskQueue(ctx context.Context, req read.TaskQueueRequest) (*read.TaskQueueDescription, error) {
	out := &read.TaskQueueDescription{Observation: a.observe(), TaskQueue: a.conv.ident(req.TaskQueue)}
	// The workflow and activity halves are two reads of their own; they
	// run side by side, so the tool answers in the time of the slower one.
	// A failure of either fails the whole answer, as before.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The routing of a versioned task queue is the same in both answers;
	// it is read from the workflow half's.
	parts := []struct {
		kind       enumspb.TaskQueueType
		into       *read.TaskQueuePart
		versioning **read.TaskQueueVersioning
	}{
		{enumspb.TASK_QUEUE_TYPE_WORKFLOW, &out.Workflow, &out.Versioning},
		{enumspb.TASK_QUEUE_TYPE_ACTIVITY, &out.Activity, nil},
	}
	type ended struct {
		err      error
		panicked any
	}
	ends := make(chan ended, len(parts))
	for _, part := range parts {
		go func() {
			// A panic here would end the process: no recover of the
			// caller's reaches this goroutine. It goes to the caller.
			defer func() {
				if v := recover(); v != nil {
					ends <- ended{panicked: v}
					cancel()
				}
			}()
			err := a.describeTaskQueuePart(ctx, req.TaskQueue, part.kind, part.into, part.versioning)
			ends <- ended{err: err} // before cancelling, so the first failure is the one told
			if err != nil {
				cancel()
			}
		}()
	}
	var first error
	var panicked any
	for range parts {
		e := <-ends
		if e.panicked != nil && panicked == nil {
			panicked = e.panicked
		}
		if e.err != nil && first == nil {
			first = e.err
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

func (a *Adapter) describeTaskQueuePart(ctx context.Context, taskQueue string, kind enumspb.TaskQueueType, into *read.TaskQueuePart, versioning **read.TaskQueueVersioning) error {
	resp, err := a.client.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace:     a.namespace,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: taskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: kind,
		ReportStats:   true,
	})
	if err != nil {
		return classify(err)
	}
	into.Pollers = make([]read.Poller, 0, len(resp.GetPollers()))
	for _, p := range resp.GetPollers() {
		into.Pollers = append(into.Pollers, read.Poller{
			Identity:       a.conv.quoted(p.GetIdentity()),
			LastAccessTime: timeOf(p.GetLastAccessTime()),
			RatePerSecond:  p.GetRatePerSecond(),
			DeploymentName: a.conv.ident(p.GetDeploymentOptions().GetDeploymentName()),
			BuildID:        a.conv.ident(p.GetDeploymentOptions().GetBuildId()),
		})
	}
	if v := resp.GetVersioningInfo(); versioning != nil && v != nil {
		*versioning = a.conv.taskQueueVersioning(v)
	}
	if s := resp.GetStats(); s != nil {
		into.Backlog = &read.TaskQueueBacklog{
			ApproximateBacklogCount:      s.GetApproximateBacklogCount(),
			ApproximateBacklogAgeSeconds: s.GetApproximateBacklogAge().AsDuration().Seconds(),
			TasksAddRate:                 float64(s.GetTasksAddRate()),
			TasksDispatchRate:            float64(s.GetTasksDispatchRate()),
		}
	}
	return nil
}

func (a *Adapter) ListSchedules(ctx context.Context, req read.ListSchedulesRequest) (*read.ScheduleList, error) {
	token, err := decodePageToken(req.NextPageToken)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.WorkflowService().ListSchedules(ctx, &workflowservice.ListSchedulesRequest{
		Namespace:       a.namespace,
		MaximumPageSize: int32(req.PageSize),
		NextPageToken:   token,
	})
	if err != nil {
		return nil, classify(err)
	}
	out := &read.ScheduleList{
		Observation:   a.observe(),
		Schedules:     make([]read.ScheduleSummary, 0, len(resp.GetSchedules())),
		NextPageToken: encodePageToken(resp.GetNextPageToken()),
	}
	for _, s := range resp.GetSchedules() {
		out.Schedules = append(out.Schedules, a.conv.scheduleSummary(s))
	}
	return out, nil
}

func (a *Adapter) DescribeSchedule(ctx context.Context, ref read.ScheduleRef) (*read.ScheduleDescription, error) {
	resp, err := a.client.WorkflowService().DescribeSchedule(ctx, &workflowservice.DescribeScheduleRequest{
		Namespace:  a.namespace,
		ScheduleId: ref.ScheduleID,
	})
	if err != nil {
		return nil, classify(err)
	}
	return a.conv.scheduleDescription(a.observe(), ref.ScheduleID, resp), nil
}

func (a *Adapter) DescribeNamespace(ctx context.Context) (*read.NamespaceDescription, error) {
	resp, err := a.client.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: a.namespace})
	if err != nil {
		return nil, classify(err)
	}
	// Description, OwnerEmail and Data are free text and key-value data the
	// namespace's owner wrote; they are never read.
	return &read.NamespaceDescription{
		Observation:             a.observe(),
		State:                   a.conv.enumName(resp.GetNamespaceInfo().GetState()),
		RetentionSeconds:        resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration().Seconds(),
		IsGlobalNamespace:       resp.GetIsGlobalNamespace(),
		ActiveCluster:           a.conv.ident(resp.GetReplicationConfig().GetActiveClusterName()),
		HistoryArchivalState:    a.conv.enumName(resp.GetConfig().GetHistoryArchivalState()),
		VisibilityArchivalState: a.conv.enumName(resp.GetConfig().GetVisibilityArchivalState()),
		ServerVersion:           a.conv.ident(a.serverVersion),
	}, nil
}

// hidden reports whether a workflow's search attributes place it in one of
// the divisions Temporal keeps hidden in a namespace (schedulers, batch
// operations, worker deployments: TemporalNamespaceDivision is set), which
// porthole neither lists (queries may not name the attribute) nor shows by
// id.
func hidden(sa *commonpb.SearchAttributes) bool {
	_, ok := sa.GetIndexedFields()["TemporalNamespaceDivision"]
	return ok
}

// Page tokens are Temporal's bytes, base64url-encoded: opaque to the client
// and never a skip count.
func encodePageToken(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > maxPageTokenLen {
		return nil, fmt.Errorf("%w: the page token is longer than any porthole issues", read.ErrInvalidArgument)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: the page token is not one porthole issued", read.ErrInvalidArgument)
	}
	return b, nil
}
