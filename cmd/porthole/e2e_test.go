package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// unreachableTemporal is the Temporal address of a porthole that must not
// dial: nothing listens on port 1, so one that dials after all fails to
// connect rather than passing against a real server.
const unreachableTemporal = "127.0.0.1:1"

// baseEnv is the environment every porthole process gets in these tests:
// nothing of the test's own, so a setting cannot leak in by accident. Its
// Temporal is unreachableTemporal, for a porthole that refuses or stops
// before it dials, or that is given an address of its own; temporalEnv gives
// the shared dev server.
func baseEnv(extra ...string) []string {
	return portholeEnv(unreachableTemporal, "default", extra...)
}

// temporalEnv is baseEnv with the shared seeded dev server, which it starts
// if no test has yet; under -short it skips t.
func temporalEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	srv := devServer(t)
	return portholeEnv(srv.FrontendHostPort(), srv.Namespace, extra...)
}

func portholeEnv(temporalAddress, namespace string, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TEMPORAL_ADDRESS=" + temporalAddress,
		"TEMPORAL_NAMESPACE=" + namespace,
		// Parallel tests each run a porthole: free admin ports, and limits
		// high enough that no test here trips them by accident.
		"PORTHOLE_ADMIN_ADDR=127.0.0.1:0",
		"PORTHOLE_RATE_PER_PRINCIPAL=1000", "PORTHOLE_RATE_PER_PRINCIPAL_BURST=1000",
		"PORTHOLE_RATE_GLOBAL=1000", "PORTHOLE_RATE_GLOBAL_BURST=1000",
	}, extra...)
}

// syncBuffer collects a process's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a running porthole with its operations log. done is closed
// when it exits; err is then its exit error.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error
}

// startPorthole runs the built binary and waits until a log line whose msg is
// want appears, returning that line's fields.
func startPorthole(t *testing.T, env []string, want string, args ...string) (*process, map[string]any) {
	t.Helper()
	cmd := exec.Command(portholeBin(t), args...)
	cmd.Env = env
	logs := &syncBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(logs, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); pw.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	found := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == want {
				found <- line
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case line := <-found:
		return p, line
	case <-p.done:
		t.Fatalf("porthole %v exited (%v) before logging %q:\n%s", args, p.err, want, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("porthole %v did not log %q within 30s:\n%s", args, want, logs)
	}
	return nil, nil
}

// newToken runs `porthole token new` and returns the tokens file and token.
func newToken(t *testing.T, name string) (file, token string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "tokens")
	cmd := exec.Command(portholeBin(t), "token", "new", "--name", name, "--tokens-file", file)
	cmd.Env = baseEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("token new: %v\n%s", err, stderr.String())
	}
	token = strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(token, "ph_") || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("token new printed %q, want one ph_ token line", stdout.String())
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file: %v, %v; want mode 0600", st, err)
	}
	return file, token
}

// recordingTransport adds the bearer token and keeps every response body
// byte for byte, so a test can search exactly what came over the wire.
type recordingTransport struct {
	token string
	mu    sync.Mutex
	wire  bytes.Buffer
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if rt.token != "" {
		req.Header.Set("Authorization", "Bearer "+rt.token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	rt.wire.Write(body)
	rt.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func (rt *recordingTransport) bytes() []byte {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return bytes.Clone(rt.wire.Bytes())
}

// auditEnv points a porthole at a fresh audit log and key, returned.
func auditEnv(t *testing.T) (env []string, logPath, keyPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "audit.log")
	keyPath = auditKeyOf(logPath)
	if err := os.WriteFile(keyPath, []byte("0123456789abcdef0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"PORTHOLE_AUDIT_LOG=" + logPath, "PORTHOLE_AUDIT_KEY_FILE=" + keyPath}, logPath, keyPath
}

// auditKeyOf is the key auditEnv wrote beside an audit log.
func auditKeyOf(logPath string) string {
	return filepath.Join(filepath.Dir(logPath), "audit.key")
}

// serveHTTP starts `porthole serve` with a fresh token and audit log, and
// extra settings, and returns its endpoint, the token, the process and the
// audit log's path. The audit key is auditKeyOf(auditLog).
func serveHTTP(t *testing.T, extra ...string) (endpoint, token string, p *process, auditLog string) {
	t.Helper()
	file, token := newToken(t, "e2e-agent")
	env, auditLog, _ := auditEnv(t)
	env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file)
	p, line := startPorthole(t, temporalEnv(t, append(env, extra...)...), "serving MCP", "serve")
	return line["endpoint"].(string), token, p, auditLog
}

// stop ends a porthole with SIGTERM and waits for it.
func (p *process) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("porthole did not stop within 15s of SIGTERM")
	}
}

// checkAudit verifies an audit log with the binary a reviewer would use, and
// checks that each tool call made left exactly one call and one result
// record, in that order, naming the principal and the tool.
func checkAudit(t *testing.T, logPath, keyPath, principal string, calls []string) (said []string) {
	t.Helper()
	verify := exec.Command(portholeBin(t), "audit", "verify", "--key-file", keyPath, logPath)
	verify.Env = baseEnv()
	if out, err := verify.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK:") {
		t.Fatalf("porthole audit verify: %v\n%s", err, out)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Kind, RequestID, Principal, Tool, Transport, Outcome string
		Args                                                 json.RawMessage
		Redactions                                           int
	}
	var recs []rec
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r rec
		decode(t, []byte(line), &r)
		if r.Kind == "call" || r.Kind == "result" {
			recs = append(recs, r)
		}
	}
	if len(recs) != 2*len(calls) {
		t.Fatalf("%d call and result records for %d calls:\n%s", len(recs), len(calls), b)
	}
	for i, tool := range calls {
		call, result := recs[2*i], recs[2*i+1]
		if call.Kind != "call" || result.Kind != "result" || call.RequestID != result.RequestID {
			t.Fatalf("records %d and %d are not a call and its result: %+v %+v", 2*i, 2*i+1, call, result)
		}
		for _, r := range []rec{call, result} {
			if r.Principal != fmt.Sprintf("%q", principal) || r.Tool != fmt.Sprintf("%q", tool) {
				t.Errorf("record %+v: want principal %q and tool %q", r, principal, tool)
			}
			said = append(said, fmt.Sprintf("%s %s %s %s args %s redactions %d", r.Kind, r.Principal, r.Tool, r.Outcome, r.Args, r.Redactions))
		}
	}
	return said
}

func connectHTTP(t *testing.T, endpoint string, rt *recordingTransport) *mcp.ClientSession {
	return connectHTTPAt(t, endpoint, rt, "")
}

// e2eVersions are the protocol versions the e2e suite calls every tool
// at, each pinned: the go-sdk client speaks the newest by default.
var e2eVersions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// e2eClient is the e2e suite's client; sessionAt pins a session's protocol
// version ("" for the go-sdk's default, the newest).
var e2eClient = &mcp.Implementation{Name: "porthole-e2e", Version: "1"}

func sessionAt(version string) *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: version}
}

// speaks fails t unless cs negotiated version.
func speaks(t *testing.T, cs *mcp.ClientSession, version string) {
	t.Helper()
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("the session speaks %s, not the %s asked for", got, version)
	}
}

func connectHTTPAt(t *testing.T, endpoint string, rt *recordingTransport, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(e2eClient, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, sessionAt(version))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	speaks(t, cs, version)
	return cs
}

func connectStdio(t *testing.T) (*mcp.ClientSession, *syncBuffer) {
	cs, logs, _, _ := connectStdioAudited(t)
	return cs, logs
}

func connectStdioAudited(t *testing.T) (cs *mcp.ClientSession, logs *syncBuffer, auditLog, auditKey string) {
	return connectStdioAuditedAt(t, "")
}

func connectStdioAuditedAt(t *testing.T, version string) (cs *mcp.ClientSession, logs *syncBuffer, auditLog, auditKey string) {
	t.Helper()
	cmd := exec.Command(portholeBin(t), "stdio")
	env, auditLog, auditKey := auditEnv(t)
	cmd.Env = temporalEnv(t, env...)
	logs = &syncBuffer{}
	cmd.Stderr = logs
	cs, err := mcp.NewClient(e2eClient, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, sessionAt(version))
	if err != nil {
		t.Fatalf("stdio connect: %v\n%s", err, logs)
	}
	t.Cleanup(func() { cs.Close() })
	speaks(t, cs, version)
	return cs, logs, auditLog, auditKey
}

// everyCall is one call of every tool, with the answer each must give.
var everyCall = []struct {
	tool  string
	args  map[string]any
	check func(t *testing.T, structured []byte)
}{
	{"list_workflows", map[string]any{"pageSize": 100}, func(t *testing.T, b []byte) {
		var l read.WorkflowList
		decode(t, b, &l)
		status := map[string]read.WorkflowStatus{}
		for _, w := range l.Workflows {
			status[w.WorkflowID] = w.Status
		}
		for id, want := range map[string]read.WorkflowStatus{
			temporaltest.CompletedWorkflowID: "Completed", temporaltest.FailedWorkflowID: "Failed", temporaltest.TimedOutWorkflowID: "TimedOut",
			temporaltest.RunningWorkflowID: "Running", temporaltest.ChildWorkflowID: "Running",
		} {
			if status[id] != want {
				t.Errorf("status of %s = %q, want %q", id, status[id], want)
			}
		}
	}},
	{"count_workflows", map[string]any{"query": "ExecutionStatus = 'Failed'"}, func(t *testing.T, b []byte) {
		var c read.WorkflowCount
		decode(t, b, &c)
		if c.Count != 1 {
			t.Errorf("failed count = %d, want 1", c.Count)
		}
	}},
	{"describe_workflow", map[string]any{"workflowId": temporaltest.RunningWorkflowID}, func(t *testing.T, b []byte) {
		var d read.WorkflowDescription
		decode(t, b, &d)
		if d.Workflow.Status != "Running" || len(d.PendingActivities) != 1 || len(d.PendingChildren) != 1 {
			t.Fatalf("describe = %+v", d)
		}
		p := d.PendingActivities[0]
		if p.ActivityType != temporaltest.ReserveActivityType || p.Attempt < 2 || p.LastFailure == nil || p.LastFailure.Kind != "application" {
			t.Fatalf("pending activity = %+v", p)
		}
		// The failure message is somebody else's words: quoted, with the
		// credentials a careless worker put in it redacted at the wire.
		msg := p.LastFailure.Message
		if msg.Origin != "porthole-quoting-temporal" {
			t.Errorf("failure message origin %q", msg.Origin)
		}
		for _, want := range []string{"[REDACTED:jwt]", "[REDACTED:aws-access-key-id]", "Bearer [REDACTED:bearer]", temporaltest.FreeTextMarker} {
			if !strings.Contains(msg.Text, want) {
				t.Errorf("failure message %q lacks %q", msg.Text, want)
			}
		}
		// The worker's identity carries a bidi override and a zero-width
		// space; they arrive as visible escapes.
		if id := p.LastWorkerIdentity; id == nil || id.Text != temporaltest.WorkerIdentity+`\u202E\u200B` || id.Origin != "porthole-quoting-temporal" {
			t.Errorf("worker identity %+v, want the escaped form", id)
		}
	}},
	{"describe_workflow", map[string]any{"workflowId": temporaltest.FailedWorkflowID}, func(t *testing.T, b []byte) {
		var d read.WorkflowDescription
		decode(t, b, &d)
		if d.Workflow.Status != "Failed" || d.Workflow.CloseTime == nil {
			t.Errorf("describe failed workflow = %+v", d.Workflow)
		}
		// Why it failed: its failure and the chain of causes, each message
		// quoted, with the secrets a worker put in them redacted and the
		// bidi override escaped.
		f := d.CloseFailure
		if f == nil || f.ApplicationErrorType != "InventoryError" || f.Message.Text != temporaltest.FailureMessage || len(f.Causes) != 3 {
			t.Fatalf("close failure = %+v", f)
		}
		for _, c := range f.Causes {
			if c.Message.Origin != "porthole-quoting-temporal" {
				t.Errorf("cause %+v is not quoted", c)
			}
		}
		if m := f.Causes[1].Message.Text; m != "stock service refused: session [REDACTED:jwt]" {
			t.Errorf("the activity's failure = %q", m)
		}
		if m := f.Causes[2].Message.Text; m != `warehouse db \u202E unreachable with key [REDACTED:aws-access-key-id]` {
			t.Errorf("the root cause = %q", m)
		}
	}},
	{"describe_workflow", map[string]any{"workflowId": temporaltest.NexusCallerWorkflowID}, func(t *testing.T, b []byte) {
		var d read.WorkflowDescription
		decode(t, b, &d)
		if len(d.PendingNexusOperations) != 1 || d.PendingNexusOperations[0].Endpoint != temporaltest.NexusEndpoint ||
			d.PendingNexusOperations[0].Operation != temporaltest.NexusOperation || d.PendingNexusOperations[0].State != "Started" {
			t.Errorf("the Nexus caller's pending operations = %+v", d.PendingNexusOperations)
		}
	}},
	{"describe_workflow", map[string]any{"workflowId": temporaltest.NexusHandlerWorkflowID}, func(t *testing.T, b []byte) {
		var d read.WorkflowDescription
		decode(t, b, &d)
		if len(d.Callbacks) != 1 || d.Callbacks[0].Trigger != "WorkflowClosed" || d.Callbacks[0].State != "Standby" {
			t.Errorf("the Nexus handler's callbacks = %+v", d.Callbacks)
		}
	}},
	{"describe_workflow", map[string]any{"workflowId": temporaltest.TimedOutWorkflowID}, func(t *testing.T, b []byte) {
		var d read.WorkflowDescription
		decode(t, b, &d)
		if d.Workflow.Status != "TimedOut" || d.TimedOut == nil || d.TimedOut.Which != "execution" || d.CloseFailure != nil {
			t.Errorf("describe timed-out workflow = %+v, %+v", d.Workflow, d.TimedOut)
		}
	}},
	{"get_workflow_history", map[string]any{"workflowId": temporaltest.FailedWorkflowID, "pageSize": 100}, func(t *testing.T, b []byte) {
		var h read.History
		decode(t, b, &h)
		var failures []string
		for _, e := range h.Events {
			if e.Failure != nil {
				failures = append(failures, e.EventType+":"+e.Failure.ApplicationErrorType)
			}
		}
		if want := []string{"ActivityTaskFailed:StockError", "WorkflowExecutionFailed:InventoryError"}; !slices.Equal(failures, want) {
			t.Errorf("failures in the history = %v, want %v", failures, want)
		}
	}},
	{"get_workflow_history", map[string]any{"workflowId": temporaltest.TimedOutWorkflowID, "pageSize": 100}, func(t *testing.T, b []byte) {
		var h read.History
		decode(t, b, &h)
		timeouts := map[string]string{}
		for _, e := range h.Events {
			timeouts[e.EventType] = e.TimeoutType
		}
		if timeouts["ActivityTaskTimedOut"] != "StartToClose" {
			t.Errorf("timeout types in the history = %v", timeouts)
		}
		if _, ok := timeouts["WorkflowExecutionTimedOut"]; !ok {
			t.Errorf("the history lacks the workflow's timeout: %v", timeouts)
		}
	}},
	{"get_workflow_history", map[string]any{"workflowId": temporaltest.CompletedWorkflowID, "pageSize": 500}, func(t *testing.T, b []byte) {
		var h read.History
		decode(t, b, &h)
		var types []string
		for _, e := range h.Events {
			types = append(types, e.EventType)
			if e.EventType == "ActivityTaskScheduled" && (e.ActivityType != temporaltest.ChargeActivityType || e.ActivityID == "") {
				t.Errorf("scheduled event = %+v", e)
			}
		}
		for _, want := range []string{"WorkflowExecutionStarted", "ActivityTaskScheduled", "ActivityTaskStarted", "ActivityTaskCompleted", "WorkflowExecutionCompleted"} {
			if !slices.Contains(types, want) {
				t.Errorf("history lacks %s: %v", want, types)
			}
		}
	}},
	{"get_workflow_history", map[string]any{"workflowId": temporaltest.RunningWorkflowID}, func(t *testing.T, b []byte) {
		var h read.History
		decode(t, b, &h)
		var child, timer bool
		for _, e := range h.Events {
			child = child || (e.ChildWorkflowID == temporaltest.ChildWorkflowID && e.ChildWorkflowType == temporaltest.ChildWorkflowType)
			timer = timer || (e.EventType == "TimerStarted" && e.TimerID != "")
		}
		if !child || !timer {
			t.Errorf("history of the running workflow lacks the child (%v) or the timer (%v)", child, timer)
		}
	}},
	{"describe_task_queue", map[string]any{"taskQueue": temporaltest.TaskQueue}, func(t *testing.T, b []byte) {
		var q read.TaskQueueDescription
		decode(t, b, &q)
		if len(q.Workflow.Pollers) == 0 || len(q.Activity.Pollers) == 0 {
			t.Errorf("task queue = %+v", q)
		}
	}},
	{"list_schedules", nil, func(t *testing.T, b []byte) {
		var l read.ScheduleList
		decode(t, b, &l)
		if len(l.Schedules) != 1 || l.Schedules[0].ScheduleID != temporaltest.ScheduleID || len(l.Schedules[0].RecentActions) == 0 {
			t.Errorf("schedules = %+v", l.Schedules)
		}
	}},
	{"describe_schedule", map[string]any{"scheduleId": temporaltest.ScheduleID}, func(t *testing.T, b []byte) {
		var d read.ScheduleDescription
		decode(t, b, &d)
		if d.WorkflowType != temporaltest.OrderWorkflowType || d.TaskQueue != temporaltest.TaskQueue || d.ActionCount < 1 {
			t.Errorf("schedule = %+v", d)
		}
	}},
	{"describe_namespace", nil, func(t *testing.T, b []byte) {
		var n read.NamespaceDescription
		decode(t, b, &n)
		if n.Namespace != devServer(t).Namespace || n.State != "Registered" {
			t.Errorf("namespace = %+v", n)
		}
	}},
	{"describe_task_queue", map[string]any{"taskQueue": temporaltest.VersionedTaskQueue}, func(t *testing.T, b []byte) {
		var q read.TaskQueueDescription
		decode(t, b, &q)
		if v := q.Versioning; v == nil || v.DeploymentName != temporaltest.DeploymentName || v.CurrentBuildID != temporaltest.CurrentBuildID ||
			v.RampingBuildID != temporaltest.RampingBuildID || v.RampingPercentage != temporaltest.RampPercentage {
			t.Errorf("the versioned task queue's routing = %+v", q.Versioning)
		}
	}},
	{"list_worker_deployments", map[string]any{"pageSize": 10}, func(t *testing.T, b []byte) {
		var l read.WorkerDeploymentList
		decode(t, b, &l)
		if !slices.ContainsFunc(l.Deployments, func(d read.WorkerDeploymentSummary) bool {
			return d.Name == temporaltest.DeploymentName && d.Routing.CurrentBuildID == temporaltest.CurrentBuildID && d.Routing.RampingBuildID == temporaltest.RampingBuildID
		}) {
			t.Errorf("worker deployments = %+v", l.Deployments)
		}
	}},
	{"describe_worker_deployment", map[string]any{"deploymentName": temporaltest.DeploymentName}, func(t *testing.T, b []byte) {
		var d read.WorkerDeploymentDescription
		decode(t, b, &d)
		if d.Routing.RampingPercentage != temporaltest.RampPercentage || len(d.Versions) != 2 || d.Versions[0].Status != "Current" ||
			d.Versions[1].Status != "Ramping" || len(d.Versions[0].TaskQueues) == 0 {
			t.Errorf("worker deployment = %+v", d)
		}
	}},
	{"list_search_attributes", nil, func(t *testing.T, b []byte) {
		var l read.SearchAttributeList
		decode(t, b, &l)
		got := map[string]read.SearchAttribute{}
		for _, a := range l.Attributes {
			got[a.Name] = a
		}
		// The custom attribute exists but nobody allowed it; the
		// namespace division is a system attribute no query may name.
		want := map[string]read.SearchAttribute{
			temporaltest.CustomSearchAttribute: {Name: temporaltest.CustomSearchAttribute, Type: "Keyword", Source: "temporal"},
			"WorkflowType":                     {Name: "WorkflowType", Type: "Keyword", System: true, AllowedInQueries: true, Source: "temporal"},
			"TemporalNamespaceDivision":        {Name: "TemporalNamespaceDivision", Type: "Keyword", System: true, Source: "temporal"},
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s = %+v, want %+v", name, got[name], w)
			}
		}
		if !l.Complete || l.Note != nil {
			t.Errorf("complete %v, note %v: want the dev server's whole list", l.Complete, l.Note)
		}
	}},
	{"list_batch_operations", map[string]any{"pageSize": 10}, func(t *testing.T, b []byte) {
		var l read.BatchOperationList
		decode(t, b, &l)
		if len(l.BatchOperations) != 1 || l.BatchOperations[0].JobID != temporaltest.BatchJobID || l.BatchOperations[0].State != "Completed" || l.BatchOperations[0].StartTime == nil {
			t.Errorf("batch operations = %+v", l.BatchOperations)
		}
	}},
	{"describe_batch_operation", map[string]any{"jobId": temporaltest.BatchJobID}, func(t *testing.T, b []byte) {
		var d read.BatchOperationDescription
		decode(t, b, &d)
		if d.JobID != temporaltest.BatchJobID || d.OperationType != "Signal" || d.State != "Completed" || d.CloseTime == nil {
			t.Errorf("batch operation = %+v", d)
		}
		// Identity and reason are somebody else's words: quoted, and the
		// access key in them redacted.
		for what, q := range map[string]*quote.Text{"identity": d.Identity, "reason": d.Reason} {
			if q == nil || q.Origin != quote.OriginTemporal || !strings.Contains(q.Text, temporaltest.FreeTextMarker) || !strings.Contains(q.Text, "[REDACTED:aws-access-key-id]") {
				t.Errorf("%s = %+v, want quoted Temporal text with the key redacted", what, q)
			}
		}
	}},
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// callEveryTool calls every tool and checks each answer, its observation,
// and where free text appears. It returns every result, marshalled.
func callEveryTool(t *testing.T, cs *mcp.ClientSession) []byte {
	t.Helper()
	var all bytes.Buffer
	for _, c := range everyCall {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		raw, _ := json.Marshal(res)
		all.Write(raw)
		if res.IsError {
			t.Fatalf("%s returned a tool error: %s", c.tool, raw)
		}
		structured, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var obs read.Observation
		decode(t, structured, &obs)
		if obs.Namespace != devServer(t).Namespace || obs.ObservedAt.IsZero() || time.Since(obs.ObservedAt) > time.Minute {
			t.Errorf("%s: observation %+v, want the namespace and a fresh time", c.tool, obs)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !json.Valid([]byte(text)) {
			t.Errorf("%s: text content is not the JSON of the result", c.tool)
		}
		checkFreeTextIsQuoted(t, c.tool, structured)
		t.Run(c.tool, func(t *testing.T) { c.check(t, structured) })
	}
	return all.Bytes()
}

// checkFreeTextIsQuoted fails if the seeder's free-text marker appears
// anywhere but in the text of an object whose origin says it is quoted.
func checkFreeTextIsQuoted(t *testing.T, tool string, structured []byte) {
	t.Helper()
	var v any
	decode(t, structured, &v)
	var walk func(v any, quoted bool, path string)
	walk = func(v any, quoted bool, path string) {
		switch x := v.(type) {
		case map[string]any:
			isQuote := x["origin"] == "porthole-quoting-temporal"
			for k, e := range x {
				walk(e, isQuote && k == "text", path+"."+k)
			}
		case []any:
			for _, e := range x {
				walk(e, false, path+"[]")
			}
		case string:
			if strings.Contains(x, temporaltest.FreeTextMarker) && !quoted {
				t.Errorf("%s: free text from Temporal outside quoted text at %s: %q", tool, path, x)
			}
		}
	}
	walk(v, false, tool)
}

// assertNoSecret fails if any secret-shaped value the seeder planted in free
// text, or any extra value given, appears in b.
func assertNoSecret(t *testing.T, where string, b []byte, extra ...string) {
	t.Helper()
	for _, s := range append([]string{temporaltest.SecretJWT, temporaltest.SecretAWSKey, temporaltest.SecretBearer}, extra...) {
		if i := bytes.Index(b, []byte(s)); i >= 0 {
			t.Errorf("%s: the secret %q leaked: ...%s...", where, s, b[max(0, i-120):min(len(b), i+len(s)+40)])
		}
	}
}

func assertNoCanary(t *testing.T, where string, b []byte) {
	t.Helper()
	if len(b) == 0 {
		t.Fatalf("%s: nothing to search; the check would be vacuous", where)
	}
	if i := bytes.Index(b, []byte(temporaltest.CanaryPrefix)); i >= 0 {
		t.Fatalf("%s: a canary leaked: ...%s...", where, b[max(0, i-200):min(len(b), i+80)])
	}
}

func calledTools() []string {
	var tools []string
	for _, c := range everyCall {
		tools = append(tools, c.tool)
	}
	return tools
}

// TestEveryToolOverHTTP calls every tool through the whole chain at each
// protocol version, pinned, each against a porthole of its own: the same
// answers (each call's checks), the same redaction, no canary, no token,
// and the same audit records at every version.
func TestEveryToolOverHTTP(t *testing.T) {
	t.Parallel()
	var first []string
	for _, version := range e2eVersions {
		t.Run(version, func(t *testing.T) {
			said := everyToolOverHTTP(t, version)
			if first == nil {
				first = said
			} else if !slices.Equal(said, first) {
				t.Errorf("the audit records at %s differ from those at %s:\n%s\nvs\n%s", version, e2eVersions[0], strings.Join(said, "\n"), strings.Join(first, "\n"))
			}
		})
	}
}

func everyToolOverHTTP(t *testing.T, version string) []string {
	endpoint, token, p, auditLog := serveHTTP(t)
	rt := &recordingTransport{token: token}
	cs := connectHTTPAt(t, endpoint, rt, version)
	callEveryTool(t, cs)
	wire := rt.bytes()
	assertNoCanary(t, "HTTP wire", wire)
	assertNoSecret(t, "HTTP wire", wire)
	if !bytes.Contains(wire, []byte(temporaltest.FreeTextMarker)) {
		t.Error("the failure message never reached the client; the free-text check would be vacuous")
	}
	assertNoCanary(t, "operations log", []byte(p.logs.String()+"x"))
	if strings.Contains(p.logs.String(), token) {
		t.Error("the token appears in the operations log")
	}
	cs.Close()
	p.stop(t)
	said := checkAudit(t, auditLog, strings.TrimSuffix(auditLog, ".log")+".key", "e2e-agent", calledTools())
	b, _ := os.ReadFile(auditLog)
	assertNoCanary(t, "audit log", b)
	assertNoSecret(t, "audit log", b)
	if !regexp.MustCompile(`"kind":"result"[^\n]*"tool":"\\"describe_workflow\\""[^\n]*"redactions":[1-9]`).Match(b) {
		t.Error("no result record counts the redactions in describe_workflow's answer")
	}
	if strings.Contains(string(b), token) {
		t.Error("the token appears in the audit log")
	}
	return said
}

// TestEveryToolOverStdio is TestEveryToolOverHTTP over stdio.
func TestEveryToolOverStdio(t *testing.T) {
	t.Parallel()
	var first []string
	for _, version := range e2eVersions {
		t.Run(version, func(t *testing.T) {
			cs, logs, auditLog, auditKey := connectStdioAuditedAt(t, version)
			all := callEveryTool(t, cs)
			assertNoCanary(t, "stdio results", all)
			assertNoSecret(t, "stdio results", all)
			if err := cs.Close(); err != nil { // closes stdin; porthole exits and closes its audit log
				t.Logf("close: %v", err)
			}
			assertNoCanary(t, "stdio operations log", []byte(logs.String()+"x"))
			said := checkAudit(t, auditLog, auditKey, "local", calledTools())
			if first == nil {
				first = said
			} else if !slices.Equal(said, first) {
				t.Errorf("the audit records at %s differ from those at %s:\n%s\nvs\n%s", version, e2eVersions[0], strings.Join(said, "\n"), strings.Join(first, "\n"))
			}
		})
	}
}

func TestFailuresAreToolErrorsWithASentence(t *testing.T) {
	t.Parallel()
	endpoint, token, _, _ := serveHTTP(t)
	cs := connectHTTP(t, endpoint, &recordingTransport{token: token})
	stdio, _ := connectStdio(t)
	cases := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"a workflow that does not exist", "describe_workflow", map[string]any{"workflowId": "no-such-workflow"}, "found nothing"},
		{"the history of a workflow that does not exist", "get_workflow_history", map[string]any{"workflowId": "no-such-workflow"}, "found nothing"},
		{"a schedule that does not exist", "describe_schedule", map[string]any{"scheduleId": "no-such-schedule"}, "found nothing"},
		{"a malformed query", "list_workflows", map[string]any{"query": "WorkflowId = = ("}, "not a visibility query"},
		{"a malformed count query", "count_workflows", map[string]any{"query": "ORDER BY"}, "not a visibility query"},
		{"a query Temporal refuses", "count_workflows", map[string]any{"query": "StartTime > 'not a time'"}, "malformed"},
		{"a custom attribute nobody allowed", "count_workflows", map[string]any{"query": temporaltest.CustomSearchAttribute + " STARTS_WITH 'P'"}, "not allowed"},
		{"an oversized page size", "list_workflows", map[string]any{"pageSize": 1000}, "at most 100"},
		{"a forged page token", "list_workflows", map[string]any{"nextPageToken": "!!not-a-token!!"}, "not issued by porthole for this call"},
	}
	for name, session := range map[string]*mcp.ClientSession{"http": cs, "stdio": stdio} {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if err != nil {
					t.Fatalf("protocol error %v; want a tool error", err)
				}
				if !res.IsError || res.StructuredContent != nil {
					t.Fatalf("IsError=%v structured=%v; want a tool error and no result", res.IsError, res.StructuredContent)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if !strings.Contains(text, tc.want) || !strings.HasSuffix(strings.TrimSpace(text), ".") && !strings.Contains(text, "at most") {
					t.Fatalf("error text %q, want a sentence containing %q", text, tc.want)
				}
			})
		}
	}
}

func TestHTTPRefusesRequestsWithoutAToken(t *testing.T) {
	t.Parallel()
	endpoint, _, _, _ := serveHTTP(t)
	for _, auth := range []string{"", "Bearer ph_not-a-real-token", "bearer x"} {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "namespace") {
			t.Errorf("auth %q: status %d body %q; want a bare 401", auth, resp.StatusCode, body)
		}
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, endpoint, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /mcp: status %d, want 405", method, resp.StatusCode)
		}
	}
}

// freePort returns a loopback address nobody listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestServeWithoutATokenServesNothing(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	p, line := startPorthole(t, baseEnv("PORTHOLE_ADDR="+addr), "WARNING: no token is configured, so the MCP listener is not started and nothing is served on its port. "+
		"Make a token with 'porthole token new --name NAME --tokens-file FILE' and set PORTHOLE_TOKENS_FILE.", "serve")
	if line["level"] != "warn" {
		t.Errorf("level %v, want warn", line["level"])
	}
	time.Sleep(300 * time.Millisecond)
	// Whether porthole itself listens there: another test's process may
	// have been given the port since it was free (a dial alone flaked).
	if processListensOn(t, p.cmd.Process.Pid, addr) {
		t.Fatalf("porthole listens on %s without a token", addr)
	}
	select {
	case <-p.done:
		t.Fatalf("porthole exited (%v); a missing token is a warning, not a crash", p.err)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	if p.err != nil {
		t.Fatalf("exit after SIGTERM: %v", p.err)
	}
}

func TestServeWithoutAuthenticationSaysSoAtStart(t *testing.T) {
	t.Parallel()
	p, line := startPorthole(t, temporalEnv(t, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION=true"), "serving MCP", "serve")
	if !strings.Contains(p.logs.String(), "PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION is set") {
		t.Fatalf("no warning at start:\n%s", p.logs)
	}
	cs := connectHTTP(t, line["endpoint"].(string), &recordingTransport{})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"}); err != nil {
		t.Fatal(err)
	}
}

// TestTheAPIKeyNeverLeaves dials Temporal the way production does, over TLS
// with an API key, and asks everything, including questions that hand the
// key back to porthole, then searches the wire, the audit log and the
// operations log for it.
func TestTheAPIKeyNeverLeaves(t *testing.T) {
	t.Parallel()
	proxy, err := temporaltest.StartTLSProxy(devServer(t).FrontendHostPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	apiKey := "tmprl-e2e-" + strings.Repeat("k3y", 8)
	keyFile := filepath.Join(t.TempDir(), "api.key")
	if err := os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, token := newToken(t, "key-hunter")
	env, auditLog, auditKey := auditEnv(t)
	p, line := startPorthole(t, append(temporalEnv(t, env...),
		"TEMPORAL_ADDRESS="+proxy.Addr,
		"TEMPORAL_API_KEY_FILE="+keyFile, "TEMPORAL_TLS_CA="+proxy.CAFile, "TEMPORAL_TLS_SERVER_NAME=localhost",
		"PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokens, "PORTHOLE_LOG_LEVEL=debug",
	), "serving MCP", "serve")
	rt := &recordingTransport{token: token}
	cs := connectHTTP(t, line["endpoint"].(string), rt)
	callEveryTool(t, cs)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"describe_workflow", map[string]any{"workflowId": apiKey}},
		{"list_workflows", map[string]any{"query": "WorkflowId = '" + apiKey + "'"}},
		{"count_workflows", map[string]any{"query": apiKey + " = 'x'"}},
		{"describe_schedule", map[string]any{"scheduleId": apiKey}},
		{"describe_task_queue", map[string]any{"taskQueue": apiKey}},
		{"list_workflows", map[string]any{"nextPageToken": apiKey}},
	} {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
	}
	cs.Close()
	p.stop(t)
	assertNoSecret(t, "HTTP wire", rt.bytes(), apiKey)
	assertNoSecret(t, "operations log", []byte(p.logs.String()), apiKey)
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, "audit log", b, apiKey)
	if !strings.Contains(string(b), "[REDACTED:secret]") {
		t.Error("the audit log shows no redacted argument; the search above may be vacuous")
	}
	checkAudit(t, auditLog, auditKey, "key-hunter", append(calledTools(),
		"describe_workflow", "list_workflows", "count_workflows", "describe_schedule", "describe_task_queue", "list_workflows"))
}

// TestAdminListenerOverARealTemporal: /readyz is ready while Temporal
// answers, and /metrics counts calls and Temporal reads.
func TestAdminListenerOverARealTemporal(t *testing.T) {
	t.Parallel()
	endpoint, token, p, _ := serveHTTP(t)
	admin := adminOf(t, p)
	get := func(path string) (int, string) {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/readyz"); status != 200 {
		t.Fatalf("/readyz = %d %q with Temporal up", status, body)
	}
	cs := connectHTTP(t, endpoint, &recordingTransport{token: token})
	for i := 0; i < 3; i++ {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"}); err != nil {
			t.Fatal(err)
		}
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`porthole_calls_total{outcome="ok",principal="e2e-agent",tool="describe_namespace"} 3`,
		`porthole_temporal_read_duration_seconds_count{failed="false",read="DescribeNamespace"}`,
		`porthole_cache_total{result="hit"}`,
		// What the binary says of itself (porthole version), with the
		// SDK versions of its build.
		`porthole_build_info{commit=`,
		`mcp_sdk="v1.`, `temporal_sdk="v1.`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(p.logs.String(), `"build":{"version":`) {
		t.Errorf("the startup line does not say which build this is:\n%s", p.logs.String())
	}
}

// execPorthole is the built binary with env, not started.
func execPorthole(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(portholeBin(t), args...)
	cmd.Env = env
	return cmd
}

// TestAStrangersFailuresDoNotLockOutAnAgent: against the real dev server,
// more failed authentications from one address than its budget, then the
// agent's valid token from the same address: the agent is answered, and the
// stranger's next failure is the one refused with 429.
func TestAStrangersFailuresDoNotLockOutAnAgent(t *testing.T) {
	t.Parallel()
	endpoint, token, _, _ := serveHTTP(t, "PORTHOLE_FAILED_AUTH_BURST=3")
	for i := 0; i < 10; i++ {
		callRaw(endpoint, fmt.Sprintf("ph_stranger%d", i), "describe_namespace", nil)
	}
	if a := callRaw(endpoint, token, "describe_namespace", nil); a.status != http.StatusOK || a.isError || a.rpcError != "" {
		t.Fatalf("the agent's valid token after a stranger's failures: %+v; want an answer", a)
	}
	if a := callRaw(endpoint, "ph_stranger-again", "describe_namespace", nil); a.status != http.StatusTooManyRequests {
		t.Fatalf("the stranger's next failure: status %d, want 429", a.status)
	}
}

// TestAFloodOfRefusalsCannotFillTheDisk: against the real dev server, 300
// requests with bad tokens from one address write ten denial records and,
// at shutdown, one summary of the other 290; the chain verifies, and
// porthole audit report counts all 300.
func TestAFloodOfRefusalsCannotFillTheDisk(t *testing.T) {
	t.Parallel()
	endpoint, token, p, auditLog := serveHTTP(t, "PORTHOLE_FAILED_AUTH_BURST=100000", "PORTHOLE_AUDIT_DENIAL_INTERVAL=1h")
	for i := 0; i < 300; i++ {
		if a := callRaw(endpoint, fmt.Sprintf("ph_flood%d", i), "describe_namespace", nil); a.status != http.StatusUnauthorized {
			t.Fatalf("bad token %d: status %d, want 401", i, a.status)
		}
	}
	if a := callRaw(endpoint, token, "describe_namespace", nil); a.status != http.StatusOK || a.isError {
		t.Fatalf("a valid call after the flood: %+v", a)
	}
	p.stop(t)
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	denials, summarised := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Kind   string
			Groups []struct{ Count int }
		}
		decode(t, []byte(line), &r)
		switch r.Kind {
		case "denial":
			denials++
		case "denials":
			for _, g := range r.Groups {
				summarised += g.Count
			}
		}
	}
	if denials != 10 || summarised != 290 || len(b) > 64<<10 {
		t.Fatalf("%d denial records and %d denials summarised in %d bytes; want 10 and 290", denials, summarised, len(b))
	}
	verifyAuditSeries(t, auditKeyOf(auditLog), []string{auditLog})
	out, err := execPorthole(t, baseEnv(), "audit", "report", "--json", "--key-file", auditKeyOf(auditLog), auditLog).Output()
	if err != nil {
		t.Fatal(err)
	}
	var report struct{ Denials []struct{ Count int } }
	decode(t, out, &report)
	total := 0
	for _, d := range report.Denials {
		total += d.Count
	}
	if total != 300 {
		t.Fatalf("porthole audit report counts %d denials, want 300:\n%s", total, out)
	}
}

// processListensOn reports whether the process pid holds a TCP socket
// listening on addr (Linux: /proc/net/tcp's listening sockets, matched by
// inode against the process's file descriptors).
func processListensOn(t *testing.T, pid int, addr string) bool {
	t.Helper()
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// local_address is HEXIP:HEXPORT; st 0A is LISTEN; the inode is
		// the tenth field.
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		if i := strings.LastIndex(f[1], ":"); i >= 0 {
			if p, err := strconv.ParseInt(f[1][i+1:], 16, 32); err == nil && int(p) == port {
				inodes[f[9]] = true
			}
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
			return true
		}
	}
	return false
}

// TestProcessListensOnSeesAListener: the check above finds a listener of
// this process, and none on a port this process does not hold.
func TestProcessListensOnSeesAListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !processListensOn(t, os.Getpid(), ln.Addr().String()) {
		t.Fatal("a listener of this process was not seen")
	}
	if processListensOn(t, os.Getpid(), freePort(t)) {
		t.Fatal("a port nobody here holds was seen as held")
	}
}

// everyCall calls every tool porthole serves: a tool added to policy.Tools
// without a call here would go untested end to end.
func TestEveryCallCoversEveryTool(t *testing.T) {
	t.Parallel()
	var called []string
	for _, c := range everyCall {
		called = append(called, c.tool)
	}
	for _, tool := range policy.Tools {
		if !slices.Contains(called, tool) {
			t.Errorf("everyCall has no call of %s", tool)
		}
	}
}
