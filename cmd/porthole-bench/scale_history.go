package main

import (
	"context"
	"fmt"
	"net/http"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// historyPoint is the history curve at one size.
type historyPoint struct {
	events        int
	porthole, sdk sidePoint
	before        sidePoint // the baseline porthole, where measured
}

// historyCurve walks each seeded history at the largest page size,
// through porthole (get_workflow_history) and through the SDK's own
// paging (GetWorkflowExecutionHistory), in turns.
func (r *rig) historyCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, c client.Client, dir string) ([]historyPoint, error) {
	token, ph, before, err := r.curvePortholes(ctx, o, srv, dir, "history", true)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	var out []historyPoint
	for _, n := range sz.histories {
		id := historyWorkflowID(n)
		walk := func(ph *server) func(ctx context.Context) (int, error) {
			return func(ctx context.Context) (int, error) { return walkHistory(ctx, hc, ph, token, id, n) }
		}
		viaSDK := func(ctx context.Context) (int, error) { return walkHistorySDK(ctx, c, srv.Namespace, id, n) }
		sides := []side{{op: walk(ph), srv: ph, n: 1, name: fmt.Sprintf("history-%d", n)}, {op: viaSDK, n: 1}}
		if before != nil {
			sides = append(sides, side{op: walk(before), srv: before, n: 1})
		}
		pts := measureSides(ctx, o, sides)
		if err := checkSides("history of "+id, pts); err != nil {
			return nil, err
		}
		p := historyPoint{events: n, porthole: pts[0], sdk: pts[1]}
		if before != nil {
			p.before = pts[2]
			fmt.Printf("history %6d events: the baseline %8.0f events/s, CPU %s per 1,000 events\n", n, p.before.perSecond(), p.before.cpuPer(1000))
		}
		fmt.Printf("history %6d events: porthole %8.0f events/s, sdk %8.0f events/s (%.2f×), porthole CPU %s per 1,000 events\n",
			n, p.porthole.perSecond(), p.sdk.perSecond(), p.porthole.perSecond()/p.sdk.perSecond(), p.porthole.cpuPer(1000))
		out = append(out, p)
	}
	return out, nil
}

// historyPage is the most events a page of history holds
// (policy.MaxHistoryPageSize).
const historyPage = 500

// walkHistory reads workflow id's whole history through porthole ph, a
// page at a time, and counts its events, which must be n.
func walkHistory(ctx context.Context, hc *http.Client, ph *server, token, id string, n int) (int, error) {
	events, next := 0, ""
	for {
		var h struct {
			Events        []struct{} `json:"events"`
			NextPageToken string     `json:"nextPageToken"`
		}
		args := map[string]any{"workflowId": id, "pageSize": historyPage}
		if next != "" {
			args["nextPageToken"] = next
		}
		if err := again(func() error {
			_, err := toolCall(ctx, hc, ph, token, "get_workflow_history", args, &h)
			return err
		}); err != nil {
			return 0, err
		}
		events += len(h.Events)
		if next = h.NextPageToken; next == "" {
			break
		}
	}
	if events != n {
		return 0, fmt.Errorf("porthole walked %d events of %s, want %d", events, id, n)
	}
	return events, nil
}

// walkHistorySDK reads the same history through the SDK's workflow
// service, a page at a time.
func walkHistorySDK(ctx context.Context, c client.Client, namespace, id string, n int) (int, error) {
	events := 0
	var next []byte
	for {
		var resp *workflowservice.GetWorkflowExecutionHistoryResponse
		err := again(func() (err error) {
			resp, err = c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
				Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id},
				MaximumPageSize: historyPage, NextPageToken: next,
			})
			return err
		})
		if err != nil {
			return 0, err
		}
		events += len(resp.GetHistory().GetEvents())
		if next = resp.GetNextPageToken(); len(next) == 0 {
			break
		}
	}
	if events != n {
		return 0, fmt.Errorf("the SDK walked %d events of %s, want %d", events, id, n)
	}
	return events, nil
}
