package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/policy"
)

// servedTools are exactly the tools porthole may serve.
var servedTools = []string{
	"list_workflows", "count_workflows", "describe_workflow", "get_workflow_history",
	"describe_task_queue", "list_schedules", "describe_schedule", "describe_namespace",
	"list_search_attributes", "list_batch_operations", "describe_batch_operation",
	"list_worker_deployments", "describe_worker_deployment",
}

// readsDespiteTheirNames are porthole's own tools whose names the
// mutating-verb screen flags, each with the read RPCs (full gRPC method
// names) it makes: "batch" and "deploy" are mutating verbs to the screen,
// and these only read batch operations and worker deployments. The exemption lives here, in a test, and
// nowhere at run time: the screen runs on upstream tools alone (package
// upstream), which may never borrow it, so an upstream tool with one of
// these names is still withheld (TestAnUpstreamToolCannotBorrowAReadExemption).
// A new entry needs its RPCs on the guard's allowlist in package temporal,
// which holds reads only.
var readsDespiteTheirNames = map[string][]string{
	"list_batch_operations":    {"/temporal.api.workflowservice.v1.WorkflowService/ListBatchOperations"},
	"describe_batch_operation": {"/temporal.api.workflowservice.v1.WorkflowService/DescribeBatchOperation"},
	"list_worker_deployments":  {"/temporal.api.workflowservice.v1.WorkflowService/ListWorkerDeployments"},
	"describe_worker_deployment": {"/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkerDeployment",
		"/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkerDeploymentVersion"},
}

// exemptFromTheVerbScreen reports whether name is one of porthole's own
// tools that the screen flags but that only reads, checking the entry:
// every RPC it names must read.
func exemptFromTheVerbScreen(t *testing.T, name string) bool {
	t.Helper()
	rpcs, ok := readsDespiteTheirNames[name]
	if !ok {
		return false
	}
	if len(rpcs) == 0 {
		t.Errorf("the exemption of %s names no RPC", name)
	}
	for _, rpc := range rpcs {
		service, method, _ := strings.Cut(strings.TrimPrefix(rpc, "/"), "/")
		if !strings.HasPrefix(service, "temporal.api.") || !slices.ContainsFunc([]string{"List", "Describe", "Get", "Count"}, func(p string) bool { return strings.HasPrefix(method, p) }) {
			t.Errorf("the exemption of %s names %s, which is not a Temporal read", name, rpc)
		}
	}
	return true
}

// connect returns an in-memory MCP client session to a server over r.
func connect(t *testing.T, g *Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := g.mcp.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listTools(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// checkServedTools returns what is wrong with a served tool list: a name
// other than want's, or a tool not annotated read-only and non-destructive.
func checkServedTools(tools []*mcp.Tool, want []string) []string {
	var problems []string
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		a := tl.Annotations
		if a == nil || !a.ReadOnlyHint {
			problems = append(problems, tl.Name+" is not annotated readOnlyHint: true")
		}
		if a == nil || a.DestructiveHint == nil || *a.DestructiveHint {
			problems = append(problems, tl.Name+" is not annotated destructiveHint: false")
		}
	}
	slices.Sort(names)
	sorted := slices.Sorted(slices.Values(want))
	if !slices.Equal(names, sorted) {
		problems = append(problems, fmt.Sprintf("served tools %v, want exactly %v", names, sorted))
	}
	return problems
}

func TestOnlyReadToolsAreServed(t *testing.T) {
	t.Parallel()
	cs := connect(t, mustServer(t, &fakeReader{}))
	for _, p := range checkServedTools(listTools(t, cs), servedTools) {
		t.Error(p)
	}
	// An exemption from the verb screen is for a tool porthole serves and
	// whose name the screen flags: no more, so the list cannot grow stale
	// and excuse a name nobody checked.
	for name := range readsDespiteTheirNames {
		if !slices.Contains(servedTools, name) {
			t.Errorf("%s is exempt from the verb screen but not served", name)
		}
		if len(policy.MutatingVerbs(name)) == 0 {
			t.Errorf("%s is exempt from the verb screen, which does not flag it", name)
		}
	}
}

func TestServedToolCheckFailsWhenBroken(t *testing.T) {
	t.Parallel()
	cs := connect(t, mustServer(t, &fakeReader{}))
	tools := listTools(t, cs)
	yes := true
	cases := map[string][]*mcp.Tool{
		"an extra tool":  append(slices.Clone(tools), &mcp.Tool{Name: "terminate_workflow", Annotations: readOnly()}),
		"a missing tool": tools[1:],
		"a tool not marked read-only": append(slices.Clone(tools[1:]), &mcp.Tool{Name: tools[0].Name,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool)}}),
		"a destructive tool": append(slices.Clone(tools[1:]), &mcp.Tool{Name: tools[0].Name,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}}),
	}
	for name, broken := range cases {
		if len(checkServedTools(broken, servedTools)) == 0 {
			t.Errorf("the check passed %s", name)
		}
	}
}

// mutatingWords returns the mutating verbs the screen finds in a tool name.
func mutatingWords(name string) []string { return policy.MutatingVerbs(name) }

func TestNoMutatingVerbIsReachable(t *testing.T) {
	t.Parallel()
	cs := connect(t, mustServer(t, &fakeReader{}))
	for _, tl := range listTools(t, cs) {
		if w := mutatingWords(tl.Name); len(w) > 0 && !exemptFromTheVerbScreen(t, tl.Name) {
			t.Errorf("tool %s carries mutating verbs %v", tl.Name, w)
		}
	}
	for _, tl := range (&Server{reader: &fakeReader{}}).catalog() {
		if w := mutatingWords(tl.def.Name); len(w) > 0 && !exemptFromTheVerbScreen(t, tl.def.Name) {
			t.Errorf("catalog tool %s carries mutating verbs %v", tl.def.Name, w)
		}
	}
}

func TestMutatingVerbScreenFailsWhenBroken(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"terminate_workflow", "signalWorkflow", "start-workflow", "query_workflow", "pause_schedule", "TRIGGER_SCHEDULE", "batch_reset", "terminateworkflow"} {
		if len(mutatingWords(name)) == 0 {
			t.Errorf("the screen passed %s", name)
		}
	}
}

func TestToolDescriptionsAreConstantAndShort(t *testing.T) {
	t.Parallel()
	for _, tl := range (&Server{reader: &fakeReader{}}).catalog() {
		if tl.def.Description == "" || len(tl.def.Description) > 300 {
			t.Errorf("%s: description of %d bytes, want 1..300", tl.def.Name, len(tl.def.Description))
		}
	}
}

func TestArgumentsOutOfBoundsAreRefusedBeforeTemporal(t *testing.T) {
	t.Parallel()
	r := &fakeReader{}
	cs := connect(t, mustServer(t, r))
	cases := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"an oversized page size", "list_workflows", map[string]any{"pageSize": 5000}, "pageSize may be at most 100"},
		{"a negative page size", "list_schedules", map[string]any{"pageSize": -3}, "pageSize must be positive"},
		{"an oversized history page", "get_workflow_history", map[string]any{"workflowId": "a", "pageSize": 501}, "at most 500"},
		{"a missing workflow id", "describe_workflow", map[string]any{}, "workflowId"},
		{"an empty workflow id", "describe_workflow", map[string]any{"workflowId": ""}, "workflowId is required"},
		{"a control character in a run id", "describe_workflow", map[string]any{"workflowId": "a", "runId": "x\x1by"}, "runId contains a control character"},
		{"an overlong query", "count_workflows", map[string]any{"query": strings.Repeat("a", 3000)}, "query may be at most 2048"},
		{"an unknown argument", "describe_namespace", map[string]any{"namespace": "other"}, "namespace"},
		{"a namespace argument to a list", "list_workflows", map[string]any{"namespace": "other"}, "namespace"},
		{"a case variant of an argument name", "describe_workflow", map[string]any{"WORKFLOWID": "a"}, `no argument "WORKFLOWID"`},
		{"an argument of the wrong type", "list_workflows", map[string]any{"pageSize": "ten"}, "wrong type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				// A protocol-level refusal is also a refusal; it must still say why.
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v does not mention %q", err, tc.want)
				}
				return
			}
			if !res.IsError {
				t.Fatalf("%s with %v succeeded", tc.tool, tc.args)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(text, tc.want) {
				t.Fatalf("refusal %q does not mention %q", text, tc.want)
			}
		})
	}
	if r.count() != 0 {
		t.Fatalf("%d refused calls reached the reader", r.count())
	}
}
