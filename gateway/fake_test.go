package gateway

import (
	"context"
	"errors"

	"github.com/porthole-dev/porthole/temporal/read"
)

// fakeReader is an honest stand-in for tests that exercise the front (auth,
// tool listing, argument bounds) and never need an answer from Temporal.
// Every method fails loudly; tests that talk to Temporal use a real dev
// server instead (see cmd/porthole's end-to-end tests).
type fakeReader struct {
	calls int
}

var errFake = errors.New("fakeReader: this test must not reach Temporal")

func (f *fakeReader) ListWorkflows(context.Context, read.ListWorkflowsRequest) (*read.WorkflowList, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) CountWorkflows(context.Context, read.CountWorkflowsRequest) (*read.WorkflowCount, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) DescribeWorkflow(context.Context, read.WorkflowRef) (*read.WorkflowDescription, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) GetWorkflowHistory(context.Context, read.HistoryRequest) (*read.History, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) DescribeTaskQueue(context.Context, read.TaskQueueRequest) (*read.TaskQueueDescription, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) ListSchedules(context.Context, read.ListSchedulesRequest) (*read.ScheduleList, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) DescribeSchedule(context.Context, read.ScheduleRef) (*read.ScheduleDescription, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) DescribeNamespace(context.Context) (*read.NamespaceDescription, error) {
	f.calls++
	return nil, errFake
}
func (f *fakeReader) Ping(context.Context) error { return errFake }
