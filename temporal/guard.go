package temporal

import (
	"context"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// guardMessage starts every refusal of the guard. It travels as a gRPC
// status (PermissionDenied) because the SDK converts whatever an interceptor
// returns into a status and would lose a wrapped Go error; classify
// recognises the prefix and turns it back into read.ErrDenied.
const guardMessage = "porthole read-only guard refused"

// allowedRPCs is the third wall of read-only: the full gRPC method names
// porthole's connection may send. Everything else fails in readOnlyGuard
// before it reaches the network, so even a bug that found a way to call
// TerminateWorkflowExecution would be refused on this side of the wire.
var allowedRPCs = map[string]bool{
	workflowservice.WorkflowService_GetSystemInfo_FullMethodName:                   true, // the SDK's handshake at dial
	workflowservice.WorkflowService_DescribeNamespace_FullMethodName:               true,
	workflowservice.WorkflowService_ListWorkflowExecutions_FullMethodName:          true,
	workflowservice.WorkflowService_CountWorkflowExecutions_FullMethodName:         true,
	workflowservice.WorkflowService_DescribeWorkflowExecution_FullMethodName:       true,
	workflowservice.WorkflowService_GetWorkflowExecutionHistory_FullMethodName:     true,
	workflowservice.WorkflowService_DescribeTaskQueue_FullMethodName:               true,
	workflowservice.WorkflowService_ListSchedules_FullMethodName:                   true,
	workflowservice.WorkflowService_DescribeSchedule_FullMethodName:                true,
	workflowservice.WorkflowService_ListBatchOperations_FullMethodName:             true,
	workflowservice.WorkflowService_DescribeBatchOperation_FullMethodName:          true,
	workflowservice.WorkflowService_ListWorkerDeployments_FullMethodName:           true,
	workflowservice.WorkflowService_DescribeWorkerDeployment_FullMethodName:        true,
	workflowservice.WorkflowService_DescribeWorkerDeploymentVersion_FullMethodName: true,
	// The operator service's one read: the namespace's search attributes
	// and their types (list_search_attributes).
	operatorservice.OperatorService_ListSearchAttributes_FullMethodName: true,
}

// readOnlyGuard is a unary client interceptor that refuses every method not
// in allowedRPCs.
func readOnlyGuard(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !allowedRPCs[method] {
		return status.Errorf(codes.PermissionDenied, "%s %s", guardMessage, method)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// streamGuard refuses every streaming RPC: no read porthole makes streams.
func streamGuard(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.PermissionDenied, "%s stream %s", guardMessage, method)
}
