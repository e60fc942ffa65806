// Package read is the read-only surface porthole offers over one Temporal
// namespace: the [Reader] interface and the result types its methods return.
//
// # Why a package of its own
//
// The gateway needs these types but must never reach the Temporal SDK or a
// credential. This package imports neither: it is plain Go types, so a
// dependency test can prove the gateway's graph holds no go.temporal.io
// module while the adapter in package temporal implements [Reader].
//
// # What a result may carry
//
// Results are porthole's own flattened types, never protobuf messages. They
// hold identifiers (plain strings, escaped and capped by
// [quote.EscapeIdentifier]), times, counts, named enums, and free text only as
// [quote.Text] with its origin. No field can hold a payload: there is no
// []byte, map, any or json.RawMessage anywhere below a result, and a test in
// the gateway walks every type to keep it so. Inputs, results, memo, headers,
// search-attribute values, heartbeat details, failure details, stack traces,
// callback URLs, schedule action arguments and the namespace's description,
// owner email and data are never read into a result.
//
// # Absent and empty
//
// Every result names the namespace it is about and when it was observed. A
// collection that was looked at is present, and empty only when nothing was
// found; a failed read is an error, never an empty list.
package read

import (
	"context"
	"errors"
)

// Reader is everything porthole can ask of Temporal. Every method reads;
// there is no method that writes, and no method hands out a client.
type Reader interface {
	ListWorkflows(ctx context.Context, req ListWorkflowsRequest) (*WorkflowList, error)
	CountWorkflows(ctx context.Context, req CountWorkflowsRequest) (*WorkflowCount, error)
	DescribeWorkflow(ctx context.Context, req WorkflowRef) (*WorkflowDescription, error)
	GetWorkflowHistory(ctx context.Context, req HistoryRequest) (*History, error)
	DescribeTaskQueue(ctx context.Context, req TaskQueueRequest) (*TaskQueueDescription, error)
	ListSchedules(ctx context.Context, req ListSchedulesRequest) (*ScheduleList, error)
	DescribeSchedule(ctx context.Context, req ScheduleRef) (*ScheduleDescription, error)
	DescribeNamespace(ctx context.Context) (*NamespaceDescription, error)
	// ListSearchAttributes lists the namespace's search attributes, names
	// and types only. Where Temporal refuses the read (Temporal Cloud may),
	// it answers with Complete false, no attributes and a Note saying so,
	// rather than an error: the gateway then lists what porthole knows.
	ListSearchAttributes(ctx context.Context) (*SearchAttributeList, error)
	ListBatchOperations(ctx context.Context, req ListBatchOperationsRequest) (*BatchOperationList, error)
	DescribeBatchOperation(ctx context.Context, req BatchOperationRef) (*BatchOperationDescription, error)
	ListWorkerDeployments(ctx context.Context, req ListWorkerDeploymentsRequest) (*WorkerDeploymentList, error)
	DescribeWorkerDeployment(ctx context.Context, req WorkerDeploymentRef) (*WorkerDeploymentDescription, error)
	// Ping reports whether Temporal answers, for readiness checks.
	Ping(ctx context.Context) error
}

// Errors a Reader returns, wrapped with detail. The gateway maps each to a
// fixed sentence for the client; the detail goes to the operations log.
var (
	// ErrNotFound: the workflow, schedule or task queue does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: Temporal refused the request as malformed, for
	// example a visibility query it cannot parse.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnavailable: Temporal did not answer, or answered with a fault.
	ErrUnavailable = errors.New("temporal unavailable")
	// ErrThrottled: Temporal refused the read for its own rate limits.
	ErrThrottled = errors.New("temporal throttled the read")
	// ErrDenied: the adapter's read-only guard refused an RPC. Seeing this
	// means a bug in porthole, never a client mistake.
	ErrDenied = errors.New("rpc not allowed by porthole's read-only guard")
	// ErrHidden: the workflow is one Temporal keeps hidden in the
	// namespace (a scheduler, a batch operation, a worker deployment),
	// which porthole does not describe or read by id, as queries may not
	// name them.
	ErrHidden = errors.New("a workflow Temporal keeps hidden")
)

// ListWorkflowsRequest asks for one page of workflow executions.
type ListWorkflowsRequest struct {
	Query         string
	PageSize      int
	NextPageToken string
}

// CountWorkflowsRequest asks how many executions match a query.
type CountWorkflowsRequest struct {
	Query string
}

// WorkflowRef names one workflow execution; an empty RunID means the latest
// run.
type WorkflowRef struct {
	WorkflowID string
	RunID      string
}

// HistoryRequest asks for one page of a workflow's event history.
type HistoryRequest struct {
	WorkflowRef
	PageSize      int
	NextPageToken string
}

// TaskQueueRequest names a task queue.
type TaskQueueRequest struct {
	TaskQueue string
}

// ListSchedulesRequest asks for one page of schedules.
type ListSchedulesRequest struct {
	PageSize      int
	NextPageToken string
}

// ScheduleRef names a schedule.
type ScheduleRef struct {
	ScheduleID string
}

// ListBatchOperationsRequest asks for one page of batch operations.
type ListBatchOperationsRequest struct {
	PageSize      int
	NextPageToken string
}

// BatchOperationRef names a batch operation by its job id.
type BatchOperationRef struct {
	JobID string
}

// ListWorkerDeploymentsRequest asks for one page of worker deployments.
type ListWorkerDeploymentsRequest struct {
	PageSize      int
	NextPageToken string
}

// WorkerDeploymentRef names a worker deployment.
type WorkerDeploymentRef struct {
	DeploymentName string
}
