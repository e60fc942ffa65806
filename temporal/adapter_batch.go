package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc/codes"

	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// ListSearchAttributes asks the operator service, the one read that names
// a namespace's custom attributes with their types (GetSearchAttributes
// takes no namespace). Only names and types are read; the storage schema
// (how the attributes map onto the visibility store's columns) is not.
func (a *Adapter) ListSearchAttributes(ctx context.Context) (*read.SearchAttributeList, error) {
	resp, err := a.client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: a.namespace})
	return a.conv.searchAttributes(a.observe(), resp, err)
}

// searchAttributes converts the operator service's answer, or its refusal:
// a server that does not offer the read or does not let porthole's
// credential make it (Temporal Cloud may do either) gets an incomplete
// answer with a note, not an error, so that the gateway can still name the
// attributes porthole knows. porthole's own guard refusing the RPC is a bug
// and stays an error.
func (c conv) searchAttributes(obs read.Observation, resp *operatorservice.ListSearchAttributesResponse, err error) (*read.SearchAttributeList, error) {
	if err != nil {
		if code, refused := serverRefused(err); refused {
			note := quote.Says("Temporal refused to list this namespace's search attributes (" + code.String() +
				"), so this list holds only the attributes porthole itself knows, without their types.")
			return &read.SearchAttributeList{Observation: obs, Attributes: []read.SearchAttribute{}, Note: &note}, nil
		}
		return nil, classify(err)
	}
	out := &read.SearchAttributeList{
		Observation: obs,
		Attributes:  make([]read.SearchAttribute, 0, len(resp.GetSystemAttributes())+len(resp.GetCustomAttributes())),
		Complete:    true,
	}
	for name, t := range resp.GetSystemAttributes() {
		out.Attributes = append(out.Attributes, read.SearchAttribute{Name: c.ident(name), Type: c.enumName(t), System: true, Source: "temporal"})
	}
	for name, t := range resp.GetCustomAttributes() {
		out.Attributes = append(out.Attributes, read.SearchAttribute{Name: c.ident(name), Type: c.enumName(t), Source: "temporal"})
	}
	slices.SortFunc(out.Attributes, func(x, y read.SearchAttribute) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// serverRefused reports whether err is Temporal declining the read itself
// (PermissionDenied, Unimplemented), as against failing, and names the
// code. The guard's own refusal is PermissionDenied too, and is not this.
func serverRefused(err error) (codes.Code, bool) {
	if errors.Is(classify(err), read.ErrDenied) {
		return 0, false
	}
	switch code := serviceerror.ToStatus(err).Code(); code {
	case codes.PermissionDenied, codes.Unimplemented:
		return code, true
	}
	return 0, false
}

func (a *Adapter) ListBatchOperations(ctx context.Context, req read.ListBatchOperationsRequest) (*read.BatchOperationList, error) {
	token, err := decodePageToken(req.NextPageToken)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.WorkflowService().ListBatchOperations(ctx, &workflowservice.ListBatchOperationsRequest{
		Namespace:     a.namespace,
		PageSize:      int32(req.PageSize),
		NextPageToken: token,
	})
	if err != nil {
		return nil, classify(err)
	}
	out := &read.BatchOperationList{
		Observation:     a.observe(),
		BatchOperations: make([]read.BatchOperationSummary, 0, len(resp.GetOperationInfo())),
		NextPageToken:   encodePageToken(resp.GetNextPageToken()),
	}
	for _, o := range resp.GetOperationInfo() {
		out.BatchOperations = append(out.BatchOperations, read.BatchOperationSummary{
			JobID:         a.conv.ident(o.GetJobId()),
			OperationType: a.conv.batchType(o.GetOperationType()),
			State:         a.conv.enumName(o.GetState()),
			StartTime:     timeOf(o.GetStartTime()),
			CloseTime:     timeOf(o.GetCloseTime()),
		})
	}
	return out, nil
}

func (a *Adapter) DescribeBatchOperation(ctx context.Context, ref read.BatchOperationRef) (*read.BatchOperationDescription, error) {
	resp, err := a.client.WorkflowService().DescribeBatchOperation(ctx, &workflowservice.DescribeBatchOperationRequest{
		Namespace: a.namespace,
		JobId:     ref.JobID,
	})
	if err != nil {
		return nil, classify(err)
	}
	// Temporal answers for any workflow id of the namespace, batch or not,
	// with its state and times: an answer that names no
	// operation is no batch operation, and a principal granted only this
	// tool learns nothing of other workflows.
	if resp.GetOperationType() == enumspb.BATCH_OPERATION_TYPE_UNSPECIFIED {
		return nil, fmt.Errorf("%w: %q is no batch operation's job id", read.ErrNotFound, ref.JobID)
	}
	return a.conv.batchDescription(a.observe(), resp), nil
}

// batchDescription keeps a batch operation's type, state, times, counts,
// and its identity and reason as quoted text. Its visibility query is not
// read: a query can hold search-attribute values ("CustomerId = 'alice'").
// Nor is its list of executions.
func (c conv) batchDescription(obs read.Observation, resp *workflowservice.DescribeBatchOperationResponse) *read.BatchOperationDescription {
	return &read.BatchOperationDescription{
		Observation: obs,
		BatchOperationSummary: read.BatchOperationSummary{
			JobID:         c.ident(resp.GetJobId()),
			OperationType: c.batchType(resp.GetOperationType()),
			State:         c.enumName(resp.GetState()),
			StartTime:     timeOf(resp.GetStartTime()),
			CloseTime:     timeOf(resp.GetCloseTime()),
		},
		TotalOperationCount:    resp.GetTotalOperationCount(),
		CompleteOperationCount: resp.GetCompleteOperationCount(),
		FailureOperationCount:  resp.GetFailureOperationCount(),
		Identity:               c.quotePtr(resp.GetIdentity()),
		Reason:                 c.quotePtr(resp.GetReason()),
	}
}

// batchType names an operation type, or nothing when Temporal did not say
// (its list leaves it unspecified on some servers).
func (c conv) batchType(t fmt.Stringer) string {
	if s := t.String(); s != "Unspecified" {
		return c.ident(s)
	}
	return ""
}
