package gateway

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal/read"
)

// metrics are porthole's Prometheus series, on a registry of their own that
// only the admin listener serves. Label values are bounded: tools come from
// the fixed set (anything else is "unknown"), principals from the tokens
// file, outcomes and limits from short fixed lists.
type metrics struct {
	registry     *prometheus.Registry
	calls        *prometheus.CounterVec
	callSeconds  *prometheus.HistogramVec
	limited      *prometheus.CounterVec
	authFailures *prometheus.CounterVec
	cache        *prometheus.CounterVec
	rpcSeconds   *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "porthole_calls_total", Help: "Tool calls and tool listings, by tool, principal and outcome.",
		}, []string{"tool", "principal", "outcome"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "porthole_call_duration_seconds", Help: "Time from dispatch to answer of a call, by tool.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"tool"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "porthole_rate_limited_total", Help: "Requests refused by a rate limit, by limit.",
		}, []string{"limit"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "porthole_auth_failures_total", Help: "Requests refused by authentication, by reason.",
		}, []string{"reason"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "porthole_cache_total", Help: "Reads answered by the coalescing cache (hit, shared in flight) or passed to Temporal (miss).",
		}, []string{"result"}),
		rpcSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "porthole_temporal_read_duration_seconds", Help: "Latency of reads of Temporal, by read and whether it failed.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"read", "failed"}),
	}
	m.registry.MustRegister(m.calls, m.callSeconds, m.limited, m.authFailures, m.cache, m.rpcSeconds,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func toolLabel(tool, method string) string {
	switch {
	case method == "tools/list":
		return "tools/list"
	case slices.Contains(policy.Tools, tool):
		return tool
	}
	return "unknown"
}

func (m *metrics) call(tool, method, principal, outcome string, d time.Duration) {
	t := toolLabel(tool, method)
	m.calls.WithLabelValues(t, principal, outcome).Inc()
	m.callSeconds.WithLabelValues(t).Observe(d.Seconds())
}

func (m *metrics) rateLimited(limit string) { m.limited.WithLabelValues(limit).Inc() }
func (m *metrics) authFailed(reason string) { m.authFailures.WithLabelValues(reason).Inc() }
func (m *metrics) cached(result string)     { m.cache.WithLabelValues(result).Inc() }

// timedReader measures every read of Temporal.
type timedReader struct {
	read.Reader
	m *metrics
}

func observe[T any](m *metrics, name string, f func() (T, error)) (T, error) {
	start := time.Now()
	v, err := f()
	failed := "false"
	if err != nil {
		failed = "true"
	}
	m.rpcSeconds.WithLabelValues(name, failed).Observe(time.Since(start).Seconds())
	return v, err
}

func (t timedReader) ListWorkflows(ctx context.Context, req read.ListWorkflowsRequest) (*read.WorkflowList, error) {
	return observe(t.m, "ListWorkflows", func() (*read.WorkflowList, error) { return t.Reader.ListWorkflows(ctx, req) })
}
func (t timedReader) CountWorkflows(ctx context.Context, req read.CountWorkflowsRequest) (*read.WorkflowCount, error) {
	return observe(t.m, "CountWorkflows", func() (*read.WorkflowCount, error) { return t.Reader.CountWorkflows(ctx, req) })
}
func (t timedReader) DescribeWorkflow(ctx context.Context, req read.WorkflowRef) (*read.WorkflowDescription, error) {
	return observe(t.m, "DescribeWorkflow", func() (*read.WorkflowDescription, error) { return t.Reader.DescribeWorkflow(ctx, req) })
}
func (t timedReader) GetWorkflowHistory(ctx context.Context, req read.HistoryRequest) (*read.History, error) {
	return observe(t.m, "GetWorkflowHistory", func() (*read.History, error) { return t.Reader.GetWorkflowHistory(ctx, req) })
}
func (t timedReader) DescribeTaskQueue(ctx context.Context, req read.TaskQueueRequest) (*read.TaskQueueDescription, error) {
	return observe(t.m, "DescribeTaskQueue", func() (*read.TaskQueueDescription, error) { return t.Reader.DescribeTaskQueue(ctx, req) })
}
func (t timedReader) ListSchedules(ctx context.Context, req read.ListSchedulesRequest) (*read.ScheduleList, error) {
	return observe(t.m, "ListSchedules", func() (*read.ScheduleList, error) { return t.Reader.ListSchedules(ctx, req) })
}
func (t timedReader) DescribeSchedule(ctx context.Context, req read.ScheduleRef) (*read.ScheduleDescription, error) {
	return observe(t.m, "DescribeSchedule", func() (*read.ScheduleDescription, error) { return t.Reader.DescribeSchedule(ctx, req) })
}
func (t timedReader) DescribeNamespace(ctx context.Context) (*read.NamespaceDescription, error) {
	return observe(t.m, "DescribeNamespace", func() (*read.NamespaceDescription, error) { return t.Reader.DescribeNamespace(ctx) })
}
