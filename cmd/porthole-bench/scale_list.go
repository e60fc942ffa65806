package main

import (
	"context"
	"fmt"
	"net/http"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// listPoint is the list curve at one page size.
type listPoint struct {
	page          int
	porthole, sdk sidePoint
}

// listCurve pages through the namespace's workflows at each page size,
// through porthole (list_workflows) and the SDK (ListWorkflowExecutions),
// each side going on from where it left off and starting again at the end.
func (r *rig) listCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, c client.Client, dir string) ([]listPoint, error) {
	token, ph, _, err := r.curvePortholes(ctx, o, srv, dir, "list", false)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	var pts []listPoint
	for _, page := range sz.listPages {
		var phNext string
		viaPorthole := func(ctx context.Context) (int, error) {
			var l struct {
				Workflows     []struct{} `json:"workflows"`
				NextPageToken string     `json:"nextPageToken"`
			}
			args := map[string]any{"pageSize": page}
			if phNext != "" {
				args["nextPageToken"] = phNext
			}
			if err := again(func() error {
				_, err := toolCall(ctx, hc, ph, token, "list_workflows", args, &l)
				return err
			}); err != nil {
				phNext = "" // the walk starts again, as a client told so would
				return 0, err
			}
			phNext = l.NextPageToken
			return len(l.Workflows), nil
		}
		var sdkNext []byte
		viaSDK := func(ctx context.Context) (int, error) {
			var resp *workflowservice.ListWorkflowExecutionsResponse
			err := again(func() (err error) {
				resp, err = c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
					Namespace: srv.Namespace, PageSize: int32(page), NextPageToken: sdkNext,
				})
				return err
			})
			if err != nil {
				return 0, err
			}
			sdkNext = resp.GetNextPageToken()
			return len(resp.GetExecutions()), nil
		}
		sides := measureSides(ctx, o, []side{{op: viaPorthole, srv: ph, n: 1, name: fmt.Sprintf("list-%d", page)}, {op: viaSDK, n: 1}})
		if err := checkSides(fmt.Sprintf("list at page size %d", page), sides); err != nil {
			return nil, err
		}
		p := listPoint{page: page, porthole: sides[0], sdk: sides[1]}
		fmt.Printf("list page %3d: porthole %7.0f workflows/s, sdk %7.0f workflows/s (%.2f×)\n",
			page, p.porthole.perSecond(), p.sdk.perSecond(), p.porthole.perSecond()/p.sdk.perSecond())
		pts = append(pts, p)
	}
	return pts, nil
}
