package gateway

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal/read"
)

// queryReader records the visibility queries that reach it.
type queryReader struct {
	*fakeReader
	mu      sync.Mutex
	queries []string
}

func (q *queryReader) record(s string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queries = append(q.queries, s)
}

func (q *queryReader) ListWorkflows(_ context.Context, req read.ListWorkflowsRequest) (*read.WorkflowList, error) {
	q.record(req.Query)
	return &read.WorkflowList{Workflows: []read.WorkflowSummary{}}, nil
}

func (q *queryReader) CountWorkflows(_ context.Context, req read.CountWorkflowsRequest) (*read.WorkflowCount, error) {
	q.record(req.Query)
	return &read.WorkflowCount{}, nil
}

// TestTemporalIsSentTheScreenedQueryNotTheClientsText: the query tools pass
// Temporal the query printed from the screened tree. The client's own text
// once reached Temporal, whose parser read a /*! */ comment as SQL.
func TestTemporalIsSentTheScreenedQueryNotTheClientsText(t *testing.T) {
	t.Parallel()
	r := &queryReader{fakeReader: &fakeReader{}}
	g, _ := newTestServer(t, r)
	cs := connect(t, g)
	asked := `  WorkflowId='it''s'   and ExecutionStatus IN ("Running")  `
	for _, tool := range []string{policy.ToolListWorkflows, policy.ToolCountWorkflows} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"query": asked}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", tool, err, textOf(res))
		}
	}
	want := `WorkflowId = 'it\'s' and ExecutionStatus in ('Running')`
	if !slices.Equal(r.queries, []string{want, want}) {
		t.Fatalf("Temporal was sent %q; want the printed query %q twice", r.queries, want)
	}
	res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: policy.ToolCountWorkflows, Arguments: map[string]any{"query": "WorkflowId = 'a' /*! OR Secret STARTS_WITH 'c' */"}})
	if res == nil || !res.IsError || !strings.Contains(textOf(res), "comment") || len(r.queries) != 2 {
		t.Fatalf("a query with a comment: %s, and Temporal was sent %q", textOf(res), r.queries)
	}
}

func TestAServerCannotAllowMemoOrTheNamespaceDivision(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Memo", "TemporalNamespaceDivision"} {
		_, err := NewServer(&fakeReader{}, Options{Audit: &fakeAuditor{}, QueryRules: policy.QueryRules{CustomAttributes: []string{name}}})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("NewServer allowing %s: %v; want a refusal naming it", name, err)
		}
	}
}
