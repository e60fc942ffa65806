package temporal

import (
	"context"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/temporal/read"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// BenchmarkDescribeWorkflow reads the seeded running workflow from the real
// dev server, side by side: with the SDK client alone (what `make bench`
// calls its sdk mode) and through the adapter (the guard, the conversion to
// read's types, the quoting of free text). Their difference is what the
// adapter costs a describe_workflow call.
func BenchmarkDescribeWorkflow(b *testing.B) {
	ctx := context.Background()
	srv := devServer.Server(b)
	b.Run("sdk", func(b *testing.B) {
		c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace, Logger: temporaltest.Quiet()})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			_, err := c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
				Namespace: srv.Namespace,
				Execution: &commonpb.WorkflowExecution{WorkflowId: temporaltest.RunningWorkflowID},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter", func(b *testing.B) {
		a, err := Dial(ctx, Config{Address: srv.FrontendHostPort(), Namespace: srv.Namespace}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: temporaltest.RunningWorkflowID}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
