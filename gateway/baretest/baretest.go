// Package baretest is the baseline the benches measure porthole against: a
// go-sdk stateless MCP server with a typed describe_workflow tool and an
// echo tool, and no hardening (no authentication, audit, redaction or
// limits). make bench runs it against Temporal (porthole-bench's bare
// mode); gateway's BenchmarkBareDescribe runs it over a fake reader. It is
// for benches only: porthole never imports it.
package baretest

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Workflow is what the bare describe_workflow answers: a few fields.
type Workflow struct {
	WorkflowID   string    `json:"workflowId"`
	RunID        string    `json:"runId"`
	WorkflowType string    `json:"workflowType"`
	Status       string    `json:"status"`
	StartTime    time.Time `json:"startTime"`
	Pending      int       `json:"pendingActivities"`
}

// Describe reads one workflow for the bare server.
type Describe func(ctx context.Context, workflowID, runID string) (Workflow, error)

// Server is the bare MCP server: describe_workflow answered by describe,
// and echo, which reads nothing and answers its text.
func Server(describe Describe) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	type in struct {
		WorkflowID string `json:"workflowId"`
		RunID      string `json:"runId,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "describe_workflow"}, func(ctx context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, Workflow, error) {
		w, err := describe(ctx, i.WorkflowID, i.RunID)
		return nil, w, err
	})
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, i echoIn) (*mcp.CallToolResult, echoIn, error) {
		return nil, i, nil
	})
	return s
}
