package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

func TestDialRefusesANamespaceThatDoesNotExist(t *testing.T) {
	t.Parallel()
	_, err := Dial(context.Background(), Config{Address: devServer.Server(t).FrontendHostPort(), Namespace: "no-such-namespace"}, nil)
	if !errors.Is(err, read.ErrNotFound) || !strings.Contains(err.Error(), `"no-such-namespace" does not exist`) {
		t.Fatalf("Dial = %v, want a not-found error naming the namespace", err)
	}
}

func TestDialRefusesInvalidConfigurationBeforeConnecting(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: a Dial that connected before it checked
	// would fail to connect, not with ErrConfig.
	_, err := Dial(context.Background(), Config{Address: "127.0.0.1:1"}, nil)
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("Dial = %v, want ErrConfig", err)
	}
}

// TestMutatingRPCNeverLeavesTheConnection sends TerminateWorkflowExecution
// through the dialed connection itself, below every porthole type, and shows
// that the interceptor refuses it and that the workflow is still running.
func TestMutatingRPCNeverLeavesTheConnection(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()
	_, err := a.client.WorkflowService().TerminateWorkflowExecution(ctx, &workflowservice.TerminateWorkflowExecutionRequest{
		Namespace:         a.namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: temporaltest.RunningWorkflowID},
		Reason:            "this must never arrive",
	})
	if !errors.Is(classify(err), read.ErrDenied) {
		t.Fatalf("TerminateWorkflowExecution error = %v, want the read-only guard's refusal", err)
	}
	for _, call := range []func() error{
		func() error {
			_, err := a.client.WorkflowService().SignalWorkflowExecution(ctx, &workflowservice.SignalWorkflowExecutionRequest{Namespace: a.namespace})
			return err
		},
		func() error {
			_, err := a.client.WorkflowService().StartWorkflowExecution(ctx, &workflowservice.StartWorkflowExecutionRequest{Namespace: a.namespace})
			return err
		},
		func() error {
			_, err := a.client.WorkflowService().DeleteSchedule(ctx, &workflowservice.DeleteScheduleRequest{Namespace: a.namespace})
			return err
		},
	} {
		if err := call(); !errors.Is(classify(err), read.ErrDenied) {
			t.Errorf("mutating RPC error = %v, want the read-only guard's refusal", err)
		}
	}
	d, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.RunningWorkflowID})
	if err != nil {
		t.Fatal(err)
	}
	if d.Workflow.Status != "Running" {
		t.Fatalf("after the refused terminate, status = %q, want Running", d.Workflow.Status)
	}
}

func TestEveryAllowedRPCIsARead(t *testing.T) {
	t.Parallel()
	for method := range allowedRPCs {
		name := method[strings.LastIndex(method, "/")+1:]
		if !strings.HasPrefix(name, "Get") && !strings.HasPrefix(name, "Describe") &&
			!strings.HasPrefix(name, "List") && !strings.HasPrefix(name, "Count") {
			t.Errorf("allowed RPC %s does not read", method)
		}
	}
}

// TestTheGuardAllowsExactlyTheReadsTheToolsMake pins the guard's list: a
// new entry is a new wire porthole may speak, and is reviewed here.
func TestTheGuardAllowsExactlyTheReadsTheToolsMake(t *testing.T) {
	t.Parallel()
	want := []string{
		"/temporal.api.operatorservice.v1.OperatorService/ListSearchAttributes",
		"/temporal.api.workflowservice.v1.WorkflowService/CountWorkflowExecutions",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeBatchOperation",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeNamespace",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeSchedule",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeTaskQueue",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkerDeployment",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkerDeploymentVersion",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution",
		"/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo",
		"/temporal.api.workflowservice.v1.WorkflowService/GetWorkflowExecutionHistory",
		"/temporal.api.workflowservice.v1.WorkflowService/ListBatchOperations",
		"/temporal.api.workflowservice.v1.WorkflowService/ListSchedules",
		"/temporal.api.workflowservice.v1.WorkflowService/ListWorkerDeployments",
		"/temporal.api.workflowservice.v1.WorkflowService/ListWorkflowExecutions",
	}
	if got := slices.Sorted(maps.Keys(allowedRPCs)); !slices.Equal(got, want) {
		t.Fatalf("the guard allows %v, want exactly %v", got, want)
	}
}

func TestAdapterReadsTheSeededNamespace(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()

	t.Run("list shows every seeded workflow with its status", func(t *testing.T) {
		l, err := a.ListWorkflows(ctx, read.ListWorkflowsRequest{PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		status := map[string]read.WorkflowStatus{}
		for _, w := range l.Workflows {
			status[w.WorkflowID] = w.Status
		}
		want := map[string]read.WorkflowStatus{
			temporaltest.CompletedWorkflowID: "Completed",
			temporaltest.FailedWorkflowID:    "Failed",
			temporaltest.TimedOutWorkflowID:  "TimedOut",
			temporaltest.RunningWorkflowID:   "Running",
			temporaltest.ChildWorkflowID:     "Running",
		}
		for id, s := range want {
			if status[id] != s {
				t.Errorf("status of %s = %q, want %q", id, status[id], s)
			}
		}
		if l.Namespace != devServer.Server(t).Namespace || l.ObservedAt.IsZero() {
			t.Errorf("observation = %+v, want the namespace and a time", l.Observation)
		}
	})

	t.Run("a query that matches nothing is an empty list, not an absent one", func(t *testing.T) {
		l, err := a.ListWorkflows(ctx, read.ListWorkflowsRequest{Query: "WorkflowId = 'nothing-has-this-id'", PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(l)
		if !strings.Contains(string(b), `"workflows":[]`) {
			t.Fatalf("empty result = %s, want workflows:[]", b)
		}
	})

	t.Run("pagination hands out an opaque token that reads the next page", func(t *testing.T) {
		first, err := a.ListWorkflows(ctx, read.ListWorkflowsRequest{PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		if first.NextPageToken == "" || len(first.Workflows) != 1 {
			t.Fatalf("first page = %d workflows, token %q; want 1 and a token", len(first.Workflows), first.NextPageToken)
		}
		second, err := a.ListWorkflows(ctx, read.ListWorkflowsRequest{PageSize: 1, NextPageToken: first.NextPageToken})
		if err != nil {
			t.Fatal(err)
		}
		if len(second.Workflows) != 1 || second.Workflows[0].RunID == first.Workflows[0].RunID {
			t.Fatalf("second page repeats the first or is empty: %+v", second.Workflows)
		}
	})

	t.Run("a forged page token is refused", func(t *testing.T) {
		_, err := a.ListWorkflows(ctx, read.ListWorkflowsRequest{PageSize: 1, NextPageToken: "not base64!"})
		if !errors.Is(err, read.ErrInvalidArgument) {
			t.Fatalf("err = %v, want ErrInvalidArgument", err)
		}
	})

	t.Run("count matches the failed workflow", func(t *testing.T) {
		c, err := a.CountWorkflows(ctx, read.CountWorkflowsRequest{Query: "ExecutionStatus = 'Failed'"})
		if err != nil {
			t.Fatal(err)
		}
		if c.Count != 1 {
			t.Fatalf("count = %d, want 1", c.Count)
		}
	})

	t.Run("a malformed query is an invalid argument", func(t *testing.T) {
		_, err := a.CountWorkflows(ctx, read.CountWorkflowsRequest{Query: "WorkflowId = = ("})
		if !errors.Is(err, read.ErrInvalidArgument) {
			t.Fatalf("err = %v, want ErrInvalidArgument", err)
		}
	})

	t.Run("describe shows the retrying activity and the child", func(t *testing.T) {
		d, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.RunningWorkflowID})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.PendingActivities) != 1 {
			t.Fatalf("pending activities = %+v, want one", d.PendingActivities)
		}
		p := d.PendingActivities[0]
		if p.ActivityType != temporaltest.ReserveActivityType || p.Attempt < 2 || p.LastFailure == nil {
			t.Fatalf("pending activity = %+v, want %s retrying with a last failure", p, temporaltest.ReserveActivityType)
		}
		if p.LastFailure.Message.Origin != "porthole-quoting-temporal" || !strings.Contains(p.LastFailure.Message.Text, temporaltest.FreeTextMarker) {
			t.Fatalf("last failure message = %+v, want quoted Temporal text", p.LastFailure.Message)
		}
		if len(d.PendingChildren) != 1 || d.PendingChildren[0].WorkflowID != temporaltest.ChildWorkflowID {
			t.Fatalf("pending children = %+v, want %s", d.PendingChildren, temporaltest.ChildWorkflowID)
		}
	})

	t.Run("a workflow that does not exist is not found", func(t *testing.T) {
		_, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: "no-such-workflow"})
		if !errors.Is(err, read.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("history names events and identifiers only", func(t *testing.T) {
		h, err := a.GetWorkflowHistory(ctx, read.HistoryRequest{WorkflowRef: read.WorkflowRef{WorkflowID: temporaltest.CompletedWorkflowID}, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range h.Events {
			types = append(types, e.EventType)
		}
		for _, want := range []string{"WorkflowExecutionStarted", "ActivityTaskScheduled", "ActivityTaskCompleted", "WorkflowExecutionCompleted"} {
			if !slices.Contains(types, want) {
				t.Errorf("history lacks %s: %v", want, types)
			}
		}
	})

	t.Run("task queue shows the seed worker polling", func(t *testing.T) {
		q, err := a.DescribeTaskQueue(ctx, read.TaskQueueRequest{TaskQueue: temporaltest.TaskQueue})
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Workflow.Pollers) == 0 || len(q.Activity.Pollers) == 0 {
			t.Fatalf("pollers = %+v / %+v, want the seed worker on both", q.Workflow.Pollers, q.Activity.Pollers)
		}
		if q.Workflow.Pollers[0].Identity.Origin != "porthole-quoting-temporal" {
			t.Fatalf("poller identity = %+v, want quoted Temporal text", q.Workflow.Pollers[0].Identity)
		}
	})

	t.Run("schedules list and describe", func(t *testing.T) {
		l, err := a.ListSchedules(ctx, read.ListSchedulesRequest{PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Schedules) != 1 || l.Schedules[0].ScheduleID != temporaltest.ScheduleID {
			t.Fatalf("schedules = %+v, want %s", l.Schedules, temporaltest.ScheduleID)
		}
		d, err := a.DescribeSchedule(ctx, read.ScheduleRef{ScheduleID: temporaltest.ScheduleID})
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkflowType != temporaltest.OrderWorkflowType || len(d.Intervals) != 1 || d.Intervals[0].EverySeconds != 3600 || d.ActionCount < 1 {
			t.Fatalf("schedule = %+v", d)
		}
		if d.Notes == nil || d.Notes.Origin != "porthole-quoting-temporal" {
			t.Fatalf("notes = %+v, want quoted Temporal text", d.Notes)
		}
	})

	t.Run("search attributes name system and custom ones with types", func(t *testing.T) {
		l, err := a.ListSearchAttributes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Complete || l.Note != nil {
			t.Fatalf("complete = %v, note = %v; want a complete list from the dev server", l.Complete, l.Note)
		}
		got := map[string]read.SearchAttribute{}
		for _, s := range l.Attributes {
			got[s.Name] = s
		}
		if c := got[temporaltest.CustomSearchAttribute]; c.System || c.Type != "Keyword" || c.Source != "temporal" {
			t.Errorf("custom attribute = %+v, want a custom Keyword from temporal", c)
		}
		if s := got["WorkflowType"]; !s.System || s.Type != "Keyword" {
			t.Errorf("WorkflowType = %+v, want a system Keyword", s)
		}
		if !slices.IsSortedFunc(l.Attributes, func(x, y read.SearchAttribute) int { return strings.Compare(x.Name, y.Name) }) {
			t.Error("attributes are not sorted by name")
		}
	})

	t.Run("batch operations list and describe, identity and reason quoted", func(t *testing.T) {
		l, err := a.ListBatchOperations(ctx, read.ListBatchOperationsRequest{PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.BatchOperations) != 1 || l.BatchOperations[0].JobID != temporaltest.BatchJobID || l.BatchOperations[0].State != "Completed" {
			t.Fatalf("batch operations = %+v, want %s completed", l.BatchOperations, temporaltest.BatchJobID)
		}
		d, err := a.DescribeBatchOperation(ctx, read.BatchOperationRef{JobID: temporaltest.BatchJobID})
		if err != nil {
			t.Fatal(err)
		}
		if d.OperationType != "Signal" || d.State != "Completed" || d.StartTime == nil || d.CloseTime == nil || d.TotalOperationCount != 0 {
			t.Fatalf("batch operation = %+v", d)
		}
		for what, q := range map[string]*quote.Text{"identity": d.Identity, "reason": d.Reason} {
			if q == nil || q.Origin != quote.OriginTemporal || !strings.Contains(q.Text, temporaltest.FreeTextMarker) {
				t.Errorf("%s = %+v, want quoted Temporal text", what, q)
			}
		}
		if _, err := a.DescribeBatchOperation(ctx, read.BatchOperationRef{JobID: "no-such-batch"}); !errors.Is(err, read.ErrNotFound) {
			t.Errorf("an unknown job id: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("namespace", func(t *testing.T) {
		n, err := a.DescribeNamespace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.State != "Registered" || n.RetentionSeconds <= 0 {
			t.Fatalf("namespace = %+v", n)
		}
	})
}

// TestNoCanaryInAnyAdapterResult reads everything the adapter can read about
// the seeded namespace and searches the JSON for the canaries the seeder
// planted in payload fields.
func TestNoCanaryInAnyAdapterResult(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()
	var results []any
	add := func(v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, v)
	}
	add(a.ListWorkflows(ctx, read.ListWorkflowsRequest{PageSize: 100}))
	for _, id := range []string{temporaltest.CompletedWorkflowID, temporaltest.FailedWorkflowID, temporaltest.TimedOutWorkflowID, temporaltest.RunningWorkflowID,
		temporaltest.ChildWorkflowID, temporaltest.NexusCallerWorkflowID, temporaltest.NexusHandlerWorkflowID} {
		ref := read.WorkflowRef{WorkflowID: id}
		add(a.DescribeWorkflow(ctx, ref))
		add(a.GetWorkflowHistory(ctx, read.HistoryRequest{WorkflowRef: ref, PageSize: 1000}))
	}
	add(a.DescribeTaskQueue(ctx, read.TaskQueueRequest{TaskQueue: temporaltest.TaskQueue}))
	add(a.ListSchedules(ctx, read.ListSchedulesRequest{PageSize: 10}))
	add(a.DescribeSchedule(ctx, read.ScheduleRef{ScheduleID: temporaltest.ScheduleID}))
	add(a.DescribeNamespace(ctx))
	add(a.ListWorkerDeployments(ctx, read.ListWorkerDeploymentsRequest{PageSize: 10}))
	add(a.DescribeWorkerDeployment(ctx, read.WorkerDeploymentRef{DeploymentName: temporaltest.DeploymentName}))
	add(a.DescribeTaskQueue(ctx, read.TaskQueueRequest{TaskQueue: temporaltest.VersionedTaskQueue}))
	add(a.ListSearchAttributes(ctx))
	add(a.ListBatchOperations(ctx, read.ListBatchOperationsRequest{PageSize: 100}))
	add(a.DescribeBatchOperation(ctx, read.BatchOperationRef{JobID: temporaltest.BatchJobID}))
	b, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.Index(string(b), temporaltest.CanaryPrefix); i >= 0 {
		t.Fatalf("a canary leaked: ...%s...", b[max(0, i-200):min(len(b), i+100)])
	}
}

// TestWhyAWorkflowFailedOrTimedOut: a failed workflow's description holds
// the failure it closed with and its chain of causes, read from the close
// event; a timed-out one's says which timeout ran out; their histories
// hold the failure of the failed activity and the timeout type of the
// timed-out one. Details, which hold canaries, stay unread
// (TestNoCanaryInAnyAdapterResult reads the same workflows).
func TestWhyAWorkflowFailedOrTimedOut(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()

	d, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.FailedWorkflowID})
	if err != nil {
		t.Fatal(err)
	}
	f := d.CloseFailure
	if f == nil || f.Kind != "application" || f.ApplicationErrorType != "InventoryError" || !f.NonRetryable ||
		f.Message.Text != temporaltest.FailureMessage || f.Message.Origin != "porthole-quoting-temporal" {
		t.Fatalf("close failure = %+v", f)
	}
	kinds := []string{}
	for _, c := range f.Causes {
		kinds = append(kinds, c.Kind+"/"+c.ApplicationErrorType)
	}
	if want := []string{"activity/", "application/StockError", "application/WarehouseError"}; !slices.Equal(kinds, want) || f.MoreCauses != 0 {
		t.Fatalf("causes = %v (%d more), want %v", kinds, f.MoreCauses, want)
	}
	if root := f.Causes[2].Message.Text; !strings.Contains(root, `\u202E`) || strings.Contains(root, "\u202e") {
		t.Errorf("the root cause's bidi override is not escaped: %q", root)
	}
	if d.TimedOut != nil {
		t.Errorf("a failed workflow says it timed out: %+v", d.TimedOut)
	}

	d, err = a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.TimedOutWorkflowID})
	if err != nil {
		t.Fatal(err)
	}
	if d.Workflow.Status != "TimedOut" || d.CloseFailure != nil || d.TimedOut == nil ||
		d.TimedOut.Which != "execution" || d.TimedOut.ExecutionTimeoutSeconds != 4 {
		t.Fatalf("timed-out workflow = %+v, timed out %+v", d.Workflow, d.TimedOut)
	}

	failedActivity := func(id string, eventType string) read.HistoryEvent {
		t.Helper()
		h, err := a.GetWorkflowHistory(ctx, read.HistoryRequest{WorkflowRef: read.WorkflowRef{WorkflowID: id}, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Events {
			if e.EventType == eventType {
				return e
			}
		}
		t.Fatalf("no %s in the history of %s", eventType, id)
		return read.HistoryEvent{}
	}
	e := failedActivity(temporaltest.FailedWorkflowID, "ActivityTaskFailed")
	if e.Failure == nil || e.Failure.ApplicationErrorType != "StockError" || !strings.Contains(e.Failure.Message.Text, "stock service refused") ||
		len(e.Failure.Causes) != 1 || e.Failure.Causes[0].ApplicationErrorType != "WarehouseError" {
		t.Errorf("the failed activity's event = %+v", e.Failure)
	}
	e = failedActivity(temporaltest.FailedWorkflowID, "WorkflowExecutionFailed")
	if e.Failure == nil || e.Failure.ApplicationErrorType != "InventoryError" || len(e.Failure.Causes) != 3 {
		t.Errorf("the workflow's failed event = %+v", e.Failure)
	}
	e = failedActivity(temporaltest.TimedOutWorkflowID, "ActivityTaskTimedOut")
	if e.TimeoutType != "StartToClose" || e.Failure == nil || e.Failure.Kind != "timeout" || e.Failure.TimeoutType != "StartToClose" {
		t.Errorf("the timed-out activity's event = %+v, failure %+v", e, e.Failure)
	}
}

// TestPendingNexusOperationsAndCallbacks: a workflow waiting on a Nexus
// operation shows it pending with its endpoint, service and operation; the
// workflow the handler started shows the caller's callback. The input,
// headers and callback URL are never read (TestNoCanaryInAnyAdapterResult
// reads both workflows; no result type has a field for them).
func TestPendingNexusOperationsAndCallbacks(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()
	d, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.NexusCallerWorkflowID})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.PendingNexusOperations) != 1 || d.MorePendingNexusOperations != 0 || len(d.Callbacks) != 0 {
		t.Fatalf("the caller: %+v", d)
	}
	op := d.PendingNexusOperations[0]
	if op.Endpoint != temporaltest.NexusEndpoint || op.Service != temporaltest.NexusService || op.Operation != temporaltest.NexusOperation ||
		op.State != "Started" || op.Attempt < 1 || op.ScheduledTime == nil || op.ScheduledEventID == 0 {
		t.Errorf("the pending operation: %+v", op)
	}
	d, err = a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.NexusHandlerWorkflowID})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Callbacks) != 1 || d.MoreCallbacks != 0 || len(d.PendingNexusOperations) != 0 {
		t.Fatalf("the handler's workflow: %+v", d)
	}
	if cb := d.Callbacks[0]; cb.Trigger != "WorkflowClosed" || cb.State != "Standby" || cb.RegistrationTime == nil {
		t.Errorf("the callback: %+v", cb)
	}
	b, _ := json.Marshal(d)
	if strings.Contains(strings.ToLower(string(b)), "http") || strings.Contains(string(b), "temporal://") {
		t.Errorf("something like a callback URL is in the answer: %s", b)
	}
}

// TestWorkerDeploymentsAndVersions: the seeded deployment, with one version
// current and one ramping, polled by real versioned workers, is listed and
// described with its routing, each version's status and its task queues;
// the versioned task queue says where it routes and which build each
// poller runs.
func TestWorkerDeploymentsAndVersions(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()
	l, err := a.ListWorkerDeployments(ctx, read.ListWorkerDeploymentsRequest{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	var listed *read.WorkerDeploymentSummary
	for i := range l.Deployments {
		if l.Deployments[i].Name == temporaltest.DeploymentName {
			listed = &l.Deployments[i]
		}
	}
	wantRouting := func(what string, r read.Routes) {
		t.Helper()
		if r.CurrentBuildID != temporaltest.CurrentBuildID || !r.Ramping || r.RampingToUnversioned || r.RampingBuildID != temporaltest.RampingBuildID || r.RampingPercentage != temporaltest.RampPercentage {
			t.Errorf("%s routing = %+v", what, r)
		}
	}
	if listed == nil {
		t.Fatalf("the deployment is not listed: %+v", l.Deployments)
	}
	wantRouting("the list's", listed.Routing.Routes)

	d, err := a.DescribeWorkerDeployment(ctx, read.WorkerDeploymentRef{DeploymentName: temporaltest.DeploymentName})
	if err != nil {
		t.Fatal(err)
	}
	wantRouting("the description's", d.Routing.Routes)
	got := map[string]read.DeploymentVersion{}
	for _, v := range d.Versions {
		got[v.BuildID] = v
	}
	if len(d.Versions) != 2 || d.MoreVersions != 0 || d.TaskQueuesUnread != 0 || d.Versions[0].BuildID != temporaltest.CurrentBuildID {
		t.Fatalf("versions = %+v", d.Versions)
	}
	for build, status := range map[string]string{temporaltest.CurrentBuildID: "Current", temporaltest.RampingBuildID: "Ramping"} {
		v := got[build]
		if v.Status != status || v.CreateTime == nil || !slices.ContainsFunc(v.TaskQueues, func(q read.VersionTaskQueue) bool {
			return q.Name == temporaltest.VersionedTaskQueue && q.Type == "Workflow"
		}) {
			t.Errorf("version %s = %+v, want %s polling %s", build, v, status, temporaltest.VersionedTaskQueue)
		}
	}

	q, err := a.DescribeTaskQueue(ctx, read.TaskQueueRequest{TaskQueue: temporaltest.VersionedTaskQueue})
	if err != nil {
		t.Fatal(err)
	}
	if q.Versioning == nil || q.Versioning.DeploymentName != temporaltest.DeploymentName {
		t.Fatalf("the versioned task queue's versioning = %+v", q.Versioning)
	}
	wantRouting("the task queue's", q.Versioning.Routes)
	builds := map[string]bool{}
	for _, p := range q.Workflow.Pollers {
		if p.DeploymentName == temporaltest.DeploymentName {
			builds[p.BuildID] = true
		}
	}
	if !builds[temporaltest.CurrentBuildID] || !builds[temporaltest.RampingBuildID] {
		t.Errorf("the pollers' builds = %v (pollers %+v)", builds, q.Workflow.Pollers)
	}
	if _, err := a.DescribeWorkerDeployment(ctx, read.WorkerDeploymentRef{DeploymentName: "no-such-deployment"}); !errors.Is(err, read.ErrNotFound) {
		t.Errorf("an unknown deployment: %v, want not found", err)
	}
}

// TestDescribeBatchOperationAnswersForBatchesOnly: Temporal's
// DescribeBatchOperation answers for any workflow id with its state and
// times; porthole answers not found for one that is no batch operation
// (found by review: a principal granted only this tool could probe any
// workflow).
func TestDescribeBatchOperationAnswersForBatchesOnly(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	if _, err := a.DescribeBatchOperation(context.Background(), read.BatchOperationRef{JobID: temporaltest.NexusHandlerWorkflowID}); !errors.Is(err, read.ErrNotFound) {
		t.Fatalf("a workflow's id as a job id: %v, want not found", err)
	}
	if d, err := a.DescribeBatchOperation(context.Background(), read.BatchOperationRef{JobID: temporaltest.BatchJobID}); err != nil || d.OperationType == "" {
		t.Fatalf("the seeded batch: %+v, %v", d, err)
	}
}

// Temporal keeps its system workflows (a batch operation's, a scheduler's,
// a worker deployment's) in a hidden division of the namespace, which a
// query may not name; by id they answered describe_workflow and
// get_workflow_history all the same. They are refused as hidden now, and
// a workflow of the namespace's own is not.
func TestAHiddenSystemWorkflowIsNotShownByID(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()
	if _, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.BatchJobID}); !errors.Is(err, read.ErrHidden) {
		t.Errorf("describing the seeded batch operation's workflow: %v; want ErrHidden", err)
	}
	if _, err := a.GetWorkflowHistory(ctx, read.HistoryRequest{WorkflowRef: read.WorkflowRef{WorkflowID: temporaltest.BatchJobID}, PageSize: 5}); !errors.Is(err, read.ErrHidden) {
		t.Errorf("reading the seeded batch operation's history: %v; want ErrHidden", err)
	}
	if _, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.NexusHandlerWorkflowID}); err != nil {
		t.Errorf("describing a workflow of the namespace's own: %v", err)
	}
	if _, err := a.GetWorkflowHistory(ctx, read.HistoryRequest{WorkflowRef: read.WorkflowRef{WorkflowID: temporaltest.NexusHandlerWorkflowID}, PageSize: 5}); err != nil {
		t.Errorf("reading a workflow of the namespace's own: %v", err)
	}
}
