package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/gateway/baretest"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// describeWorkflow is the Temporal read of every mode but echo, made as
// porthole's adapter makes it: the workflow service's call. The client's
// DescribeWorkflow would also convert the search attributes, which neither
// porthole nor the bare server does, so the floor would rise.
func describeWorkflow(ctx context.Context, c client.Client, namespace, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: namespace,
		Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID},
	})
}

// bareServer is the baseline: a go-sdk stateless streamable HTTP server
// with describe_workflow calling the SDK and returning a small struct, and
// an echo tool; no auth, no audit, no redaction, no limits.
func bareServer(hostPort, namespace string) {
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := baretest.Server(func(ctx context.Context, workflowID, runID string) (baretest.Workflow, error) {
		d, err := describeWorkflow(ctx, c, namespace, workflowID, runID)
		if err != nil {
			return baretest.Workflow{}, err
		}
		e := d.GetWorkflowExecutionInfo()
		return baretest.Workflow{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(), WorkflowType: e.GetType().GetName(),
			Status: e.GetStatus().String(), StartTime: e.GetStartTime().AsTime(), Pending: len(d.GetPendingActivities())}, nil
	})
	// blob answers a text of the bytes asked for: the upstream of the
	// answer-size curve (porthole-bench scale).
	type blobIn struct {
		Bytes int `json:"bytes"`
	}
	var blobs sync.Map
	mcp.AddTool(s, &mcp.Tool{Name: "blob", Description: "A text of the given size.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, i blobIn) (*mcp.CallToolResult, any, error) {
			t, ok := blobs.Load(i.Bytes)
			if !ok {
				t, _ = blobs.LoadOrStore(i.Bytes, blobText(i.Bytes))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t.(string)}}}, nil, nil
		})
	mux := bareMux(s, c, namespace)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]string{"msg": "serving bare", "endpoint": "http://" + ln.Addr().String() + "/mcp", "stats": "http://" + ln.Addr().String() + "/stats"})
	fmt.Fprintln(os.Stderr, string(line))
	_ = http.Serve(ln, mux)
}

// bareMux serves the bare server at /mcp, the hop at /hop (no MCP at
// all: a plain handler that makes the same Temporal read and answers a
// few bytes, the floor for any server that stands between a client and
// Temporal on this machine), and its memory at /stats.
func bareMux(s *mcp.Server, c client.Client, namespace string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	// /hop is no MCP at all: a plain handler that makes the same Temporal
	// read and answers a few bytes, the floor for any server that stands
	// between a client and Temporal on this machine.
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Params struct {
				Arguments struct {
					WorkflowID string `json:"workflowId"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := describeWorkflow(r.Context(), c, namespace, req.Params.Arguments.WorkflowID, ""); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "go_memstats_alloc_bytes_total %d\ngo_memstats_heap_inuse_bytes %d\n", m.TotalAlloc, m.HeapInuse)
	})
	return mux
}
