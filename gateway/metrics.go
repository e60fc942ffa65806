package gateway

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/witness"
	"github.com/porthole-dev/porthole/gateway/upstream"
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
	direct       prometheus.Counter
	// auditWritten and auditFailed are the two series of the audit write
	// histogram, looked up once: two records a call observe without a
	// label lookup.
	auditWritten, auditFailed prometheus.Observer
	// upstreamTools are the served names the roster allows: label values
	// bounded by the roster.
	upstreamTools map[string]bool
	changes       *prometheus.CounterVec
	// The shared rate-limit store's (Redis), registered with it.
	sharedOnce      sync.Once
	sharedSeconds   *prometheus.HistogramVec
	sharedErrors    *prometheus.CounterVec
	sharedFallbacks *prometheus.CounterVec
	sharedUpGauge   prometheus.Gauge
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
		direct: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "porthole_direct_calls_total", Help: "Tool calls porthole answered without the MCP library's transport; every other request to /mcp went through it.",
		}),
	}
	auditSeconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "porthole_audit_write_duration_seconds", Help: "Time from asking the audit log to write a record to its answer, by whether the record was refused (failed, timed out, or a call record refused for want of free space).",
		// From 20 microseconds (a write(2) to the page cache) to 2.6 s,
		// past the default PORTHOLE_AUDIT_TIMEOUT.
		Buckets: prometheus.ExponentialBuckets(0.00002, 2, 18),
	}, []string{"failed"})
	m.auditWritten, m.auditFailed = auditSeconds.WithLabelValues("false"), auditSeconds.WithLabelValues("true")
	m.registry.MustRegister(m.calls, m.callSeconds, m.limited, m.authFailures, m.cache, m.rpcSeconds, m.direct, auditSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// BuildInfo is what a porthole binary says of itself: its version, the
// commit it was built from and that commit's time, the Go version, and the
// versions of the Temporal SDK and the MCP go-sdk in it.
type BuildInfo struct {
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	CommitTime  string `json:"commitTime,omitempty"`
	Modified    bool   `json:"modified,omitempty"`
	GoVersion   string `json:"goVersion"`
	TemporalSDK string `json:"temporalSdk"`
	MCPSDK      string `json:"mcpSdk"`
}

// buildInfo registers porthole_build_info: 1, labelled with b.
func (m *metrics) buildInfo(b BuildInfo) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "porthole_build_info", Help: "Always 1; the labels say which build this is.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "commit_time": b.CommitTime,
			"modified": strconv.FormatBool(b.Modified), "go_version": b.GoVersion, "temporal_sdk": b.TemporalSDK, "mcp_sdk": b.MCPSDK},
	})
	g.Set(1)
	m.registry.MustRegister(g)
}

func (m *metrics) toolLabel(tool, method string) string {
	switch {
	case method == "tools/list":
		return "tools/list"
	case slices.Contains(policy.Tools, tool), m.upstreamTools[tool]:
		return tool
	}
	return "unknown"
}

// principalLabel is a principal as the metrics name it: a static one as
// it is (the tokens file bounds them), an OAuth caller as its issuer's
// namespace alone (oauth:<alias>), since an issuer may let anyone sign up
// and one series per caller would grow without bound.
func principalLabel(principal string) string {
	if rest, ok := strings.CutPrefix(principal, "oauth:"); ok {
		alias, _, _ := strings.Cut(rest, ":")
		return "oauth:" + alias
	}
	return principal
}

func (m *metrics) call(tool, method, principal, outcome string, d time.Duration) {
	principal = principalLabel(principal)
	t := m.toolLabel(tool, method)
	m.calls.WithLabelValues(t, principal, outcome).Inc()
	m.callSeconds.WithLabelValues(t).Observe(d.Seconds())
}

// registerShared registers the shared store's series, once, when a front
// uses one: a porthole without Redis shows none of them.
func (m *metrics) registerShared() {
	m.sharedOnce.Do(func() {
		m.sharedSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "porthole_redis_duration_seconds", Help: "Latency of each question to the shared rate-limit store (Redis), by operation (charge, blocked, failed, probe).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 14),
		}, []string{"op"})
		m.sharedErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "porthole_redis_errors_total", Help: "Questions to the shared rate-limit store (Redis) that failed or timed out, by operation.",
		}, []string{"op"})
		m.sharedFallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "porthole_redis_fallbacks_total", Help: "Rate-limit decisions made by local buckets at 1/PORTHOLE_REPLICAS because the shared store did not answer (PORTHOLE_REDIS_FAILURE=local), by operation.",
		}, []string{"op"})
		m.sharedUpGauge = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "porthole_redis_up", Help: "1 while the shared rate-limit store (Redis) answers; 0 while its circuit breaker is open (calls refused with 503, or limited locally).",
		})
		m.registry.MustRegister(m.sharedSeconds, m.sharedErrors, m.sharedFallbacks, m.sharedUpGauge)
	})
}

func (m *metrics) sharedAsk(op string, d time.Duration, err error) {
	m.sharedSeconds.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.sharedErrors.WithLabelValues(op).Inc()
	}
}

func (m *metrics) sharedFallback(op string) { m.sharedFallbacks.WithLabelValues(op).Inc() }

func (m *metrics) sharedUp(up bool) {
	if up {
		m.sharedUpGauge.Set(1)
	} else {
		m.sharedUpGauge.Set(0)
	}
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

func (t timedReader) ListSearchAttributes(ctx context.Context) (*read.SearchAttributeList, error) {
	return observe(t.m, "ListSearchAttributes", func() (*read.SearchAttributeList, error) { return t.Reader.ListSearchAttributes(ctx) })
}
func (t timedReader) ListBatchOperations(ctx context.Context, req read.ListBatchOperationsRequest) (*read.BatchOperationList, error) {
	return observe(t.m, "ListBatchOperations", func() (*read.BatchOperationList, error) { return t.Reader.ListBatchOperations(ctx, req) })
}
func (t timedReader) DescribeBatchOperation(ctx context.Context, req read.BatchOperationRef) (*read.BatchOperationDescription, error) {
	return observe(t.m, "DescribeBatchOperation", func() (*read.BatchOperationDescription, error) { return t.Reader.DescribeBatchOperation(ctx, req) })
}

func (t timedReader) ListWorkerDeployments(ctx context.Context, req read.ListWorkerDeploymentsRequest) (*read.WorkerDeploymentList, error) {
	return observe(t.m, "ListWorkerDeployments", func() (*read.WorkerDeploymentList, error) { return t.Reader.ListWorkerDeployments(ctx, req) })
}
func (t timedReader) DescribeWorkerDeployment(ctx context.Context, req read.WorkerDeploymentRef) (*read.WorkerDeploymentDescription, error) {
	return observe(t.m, "DescribeWorkerDeployment", func() (*read.WorkerDeploymentDescription, error) { return t.Reader.DescribeWorkerDeployment(ctx, req) })
}

// timedAuditor measures every audit write, from request to answer.
type timedAuditor struct {
	Auditor
	m *metrics
}

func (t timedAuditor) Write(ctx context.Context, rec audit.Record) error {
	start := time.Now()
	err := t.Auditor.Write(ctx, rec)
	o := t.m.auditWritten
	if err != nil {
		o = t.m.auditFailed
	}
	o.Observe(time.Since(start).Seconds())
	return err
}

// auditHealth is what an Auditor may tell of its sink; audit.Log does.
type auditHealth interface {
	Stats() audit.Stats
	Problem() string
}

var _ auditHealth = (*audit.Log)(nil)

// witnessHealth is what an Auditor that sends its checkpoints to witnesses
// tells of them; audit.Log does.
type witnessHealth interface {
	Witnesses() []witness.Status
}

var _ witnessHealth = (*audit.Log)(nil)

// watchAudit adds the audit sink's series, read from the log at scrape
// time: nothing is counted twice on the path of a record.
func (m *metrics) watchAudit(h auditHealth) {
	m.registry.MustRegister(auditCollector{h})
}

type auditCollector struct{ h auditHealth }

var (
	auditFailuresDesc = prometheus.NewDesc("porthole_audit_write_failures_total",
		"Audit writes that failed, by reason: write (the sink's write or a rotation failed), sync (an fsync failed), timeout (the sink did not answer within PORTHOLE_AUDIT_TIMEOUT), low_space (a call record refused: the file system is below PORTHOLE_AUDIT_MIN_FREE_BYTES), witness (a checkpoint not appended to PORTHOLE_AUDIT_CHECKPOINT_FILE).", []string{"reason"}, nil)
	auditBytesDesc = prometheus.NewDesc("porthole_audit_written_bytes_total",
		"Bytes the audit sink took.", nil, nil)
	auditOKDesc = prometheus.NewDesc("porthole_audit_sink_ok",
		"1 while the audit sink takes records; 0 while it fails, and /readyz says why.", nil, nil)
	witnessCosignedDesc = prometheus.NewDesc("porthole_audit_witness_cosigned_records",
		"The tree size of the latest audit checkpoint each witness cosigned (PORTHOLE_AUDIT_WITNESSES).", []string{"witness"}, nil)
	witnessBehindDesc = prometheus.NewDesc("porthole_audit_witness_behind_seconds",
		"How long since each witness was sent the oldest audit checkpoint it has not cosigned; 0 while it has cosigned the latest.", []string{"witness"}, nil)
	auditFreeDesc = prometheus.NewDesc("porthole_audit_free_bytes",
		"Free space of the audit log's file system at the last check (every second); absent for a stream.", nil, nil)
)

func (c auditCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{auditFailuresDesc, auditBytesDesc, auditOKDesc, auditFreeDesc, witnessCosignedDesc, witnessBehindDesc} {
		ch <- d
	}
}

func (c auditCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.h.Stats()
	for _, f := range []struct {
		reason string
		n      uint64
	}{{"write", s.WriteFailures}, {"sync", s.SyncFailures}, {"timeout", s.Timeouts}, {"low_space", s.LowSpaceRefusals}, {"witness", s.WitnessFailures}} {
		ch <- prometheus.MustNewConstMetric(auditFailuresDesc, prometheus.CounterValue, float64(f.n), f.reason)
	}
	ch <- prometheus.MustNewConstMetric(auditBytesDesc, prometheus.CounterValue, float64(s.BytesWritten))
	ok := 1.0
	if c.h.Problem() != "" {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(auditOKDesc, prometheus.GaugeValue, ok)
	if s.FreeBytes >= 0 {
		ch <- prometheus.MustNewConstMetric(auditFreeDesc, prometheus.GaugeValue, float64(s.FreeBytes))
	}
	if wh, ok := c.h.(witnessHealth); ok {
		for _, w := range wh.Witnesses() {
			behind := 0.0
			if w.Behind > 0 {
				behind = time.Since(w.BehindSince).Seconds()
			}
			ch <- prometheus.MustNewConstMetric(witnessCosignedDesc, prometheus.GaugeValue, float64(w.Size), w.Name)
			ch <- prometheus.MustNewConstMetric(witnessBehindDesc, prometheus.GaugeValue, behind, w.Name)
		}
	}
}

// watchUpstreams adds the upstreams' series: each upstream's connection,
// tools and how its tool list is kept, read from its status at scrape time,
// and the definition changes it made.
func (m *metrics) watchUpstreams(set *upstream.Set, served []string) {
	m.upstreamTools = map[string]bool{}
	for _, name := range served {
		m.upstreamTools[name] = true
	}
	m.changes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "porthole_upstream_definition_changes_total", Help: "Pinned upstream tools whose definition changed, withheld until re-pinned, by upstream.",
	}, []string{"upstream"})
	m.registry.MustRegister(m.changes, upstreamCollector{set})
}

func (m *metrics) upstreamChanged(name string) { m.changes.WithLabelValues(name).Inc() }

type upstreamCollector struct{ set *upstream.Set }

var (
	upstreamUpDesc = prometheus.NewDesc("porthole_upstream_up",
		"1 while porthole is connected to the upstream MCP server.", []string{"upstream", "transport"}, nil)
	upstreamToolsDesc = prometheus.NewDesc("porthole_upstream_tools",
		"Tools of an upstream by state: exposed, or withheld (see the log for each reason).", []string{"upstream", "state"}, nil)
	upstreamListDesc = prometheus.NewDesc("porthole_upstream_tool_list_mode",
		"How an upstream's cached tool list is kept fresh: list_changed notifications, or a TTL. 1 for the mode in use.", []string{"upstream", "mode"}, nil)
	upstreamListAgeDesc = prometheus.NewDesc("porthole_upstream_tool_list_age_seconds",
		"Seconds since the upstream's tool list was last read.", []string{"upstream"}, nil)
	upstreamRestartsDesc = prometheus.NewDesc("porthole_upstream_restarts_total",
		"Connections made again after the first: a stdio child started again, an HTTP upstream reconnected.", []string{"upstream"}, nil)
)

func (c upstreamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upstreamUpDesc, upstreamToolsDesc, upstreamListDesc, upstreamListAgeDesc, upstreamRestartsDesc} {
		ch <- d
	}
}

func (c upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	for _, u := range c.set.Upstreams() {
		s := u.Status()
		up := 0.0
		if s.State == upstream.StateUp {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upstreamUpDesc, prometheus.GaugeValue, up, s.Name, s.Transport)
		ch <- prometheus.MustNewConstMetric(upstreamToolsDesc, prometheus.GaugeValue, float64(s.Exposed), s.Name, "exposed")
		ch <- prometheus.MustNewConstMetric(upstreamToolsDesc, prometheus.GaugeValue, float64(s.Withheld), s.Name, "withheld")
		if s.ListMode != "" {
			ch <- prometheus.MustNewConstMetric(upstreamListDesc, prometheus.GaugeValue, 1, s.Name, s.ListMode)
		}
		if !s.ListedAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(upstreamListAgeDesc, prometheus.GaugeValue, time.Since(s.ListedAt).Seconds(), s.Name)
		}
		ch <- prometheus.MustNewConstMetric(upstreamRestartsDesc, prometheus.CounterValue, float64(s.Restarts), s.Name)
	}
}
