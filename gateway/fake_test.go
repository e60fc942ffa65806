package gateway

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"

	"github.com/porthole-dev/porthole/temporal/read"
)

// fakeReader is an honest stand-in for tests that exercise the front (auth,
// tool listing, argument bounds) and never need an answer from Temporal.
// Every method fails loudly; tests that talk to Temporal use a real dev
// server instead (see cmd/porthole's end-to-end tests).
type fakeReader struct {
	calls atomic.Int64
	// hold, when set, makes DescribeNamespace wait until the caller's
	// context ends, like a Temporal that does not answer.
	hold bool
}

func (f *fakeReader) count() int { return int(f.calls.Load()) }

var errFake = errors.New("fakeReader: this test must not reach Temporal")

func (f *fakeReader) ListWorkflows(context.Context, read.ListWorkflowsRequest) (*read.WorkflowList, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) CountWorkflows(context.Context, read.CountWorkflowsRequest) (*read.WorkflowCount, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) DescribeWorkflow(context.Context, read.WorkflowRef) (*read.WorkflowDescription, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) GetWorkflowHistory(context.Context, read.HistoryRequest) (*read.History, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) DescribeTaskQueue(context.Context, read.TaskQueueRequest) (*read.TaskQueueDescription, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) ListSchedules(context.Context, read.ListSchedulesRequest) (*read.ScheduleList, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) DescribeSchedule(context.Context, read.ScheduleRef) (*read.ScheduleDescription, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) DescribeNamespace(ctx context.Context) (*read.NamespaceDescription, error) {
	f.calls.Add(1)
	if f.hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errFake
}
func (f *fakeReader) Ping(context.Context) error { return errFake }

// fakeAuditor records audit records in memory; err, when set, fails every
// write, as a full or broken sink would.
type fakeAuditor struct {
	mu      sync.Mutex
	records []audit.Record
	err     error
}

func (a *fakeAuditor) Write(_ context.Context, rec audit.Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	a.records = append(a.records, rec)
	return nil
}

func (a *fakeAuditor) all() []audit.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]audit.Record(nil), a.records...)
}

// newTestServer builds a server over r with an in-memory auditor.
func newTestServer(t *testing.T, r read.Reader) (*Server, *fakeAuditor) {
	t.Helper()
	a := &fakeAuditor{}
	g, err := NewServer(r, Options{Namespace: "default", Audit: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g, a
}

func mustServer(t *testing.T, r read.Reader) *Server {
	t.Helper()
	g, _ := newTestServer(t, r)
	return g
}

func nopLogger() *zap.Logger { return zap.NewNop() }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// countingReader answers DescribeNamespace once released, counting calls.
type countingReader struct {
	*fakeReader
	calls   atomic.Int32
	release chan struct{}
}

func (c *countingReader) DescribeNamespace(ctx context.Context) (*read.NamespaceDescription, error) {
	c.calls.Add(1)
	<-c.release
	return &read.NamespaceDescription{Observation: read.Observation{Namespace: "default", ObservedAt: time.Now()}, State: "Registered"}, nil
}

func callParams(tool string) *mcp.CallToolParams { return &mcp.CallToolParams{Name: tool} }

func textOf(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	t, _ := res.Content[0].(*mcp.TextContent)
	if t == nil {
		return ""
	}
	return t.Text
}

func (f *fakeReader) ListSearchAttributes(context.Context) (*read.SearchAttributeList, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) ListBatchOperations(context.Context, read.ListBatchOperationsRequest) (*read.BatchOperationList, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) DescribeBatchOperation(context.Context, read.BatchOperationRef) (*read.BatchOperationDescription, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) ListWorkerDeployments(context.Context, read.ListWorkerDeploymentsRequest) (*read.WorkerDeploymentList, error) {
	f.calls.Add(1)
	return nil, errFake
}
func (f *fakeReader) DescribeWorkerDeployment(context.Context, read.WorkerDeploymentRef) (*read.WorkerDeploymentDescription, error) {
	f.calls.Add(1)
	return nil, errFake
}
