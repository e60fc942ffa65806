package gateway

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/pagetoken"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal/read"
)

// Page tokens leave porthole sealed (gateway/pagetoken): a token opens only
// for the tool, namespace, principal and request (ids or query) it was
// issued for. define opens the token a call hands back before the call is
// read, and seals the one its result carries.

// pagedInput is the input of a tool that reads a page at a time.
type pagedInput interface {
	pageToken() *string
	// pageCall is what of the request a page token is bound to, beside
	// the tool, the namespace and the principal.
	pageCall() []string
}

func (in *listWorkflowsInput) pageToken() *string         { return &in.NextPageToken }
func (in *listWorkflowsInput) pageCall() []string         { return []string{in.Query} }
func (in *historyInput) pageToken() *string               { return &in.NextPageToken }
func (in *historyInput) pageCall() []string               { return []string{in.WorkflowID, in.RunID} }
func (in *listSchedulesInput) pageToken() *string         { return &in.NextPageToken }
func (in *listSchedulesInput) pageCall() []string         { return nil }
func (in *listBatchOperationsInput) pageToken() *string   { return &in.NextPageToken }
func (in *listBatchOperationsInput) pageCall() []string   { return nil }
func (in *listWorkerDeploymentsInput) pageToken() *string { return &in.NextPageToken }
func (in *listWorkerDeploymentsInput) pageCall() []string { return nil }

// pagedOutput is a result that may carry a page token (read's list types).
type pagedOutput interface {
	PageToken() string
	WithPageToken(string) any
}

var (
	_ pagedOutput = (*read.WorkflowList)(nil)
	_ pagedOutput = (*read.History)(nil)
	_ pagedOutput = (*read.ScheduleList)(nil)
	_ pagedOutput = (*read.BatchOperationList)(nil)
	_ pagedOutput = (*read.WorkerDeploymentList)(nil)
)

// errTokenTooLong is a token from Temporal too long to hand out sealed: a
// client could not hand it back within policy.MaxPageTokenLen.
var errTokenTooLong = errors.New("temporal's page token is longer than porthole can hand out sealed")

// pageAD is the associated data of a call's page tokens.
func (g *Server) pageAD(ctx context.Context, req *mcp.CallToolRequest, tool string, in pagedInput) []byte {
	return pagetoken.AD(append([]string{tool, g.opts.Namespace, toolCaller(ctx, req)}, in.pageCall()...)...)
}

// openPageToken puts in in's place of the sealed token it carries the
// token Temporal issued, as the reader takes it (base64url), or refuses a
// token that does not open for this call.
func (g *Server) openPageToken(ad []byte, in pagedInput) error {
	p := in.pageToken()
	raw, err := g.pages.Open(*p, ad)
	if err != nil {
		return policy.Refuse("nextPageToken: %s", err.Error())
	}
	*p = base64.RawURLEncoding.EncodeToString([]byte(raw))
	return nil
}

// sealPageToken is out with its page token sealed for ad: a copy, since
// out may be the cache's. It reports whether it sealed one.
func (g *Server) sealPageToken(ad []byte, out any) (any, bool, error) {
	o, ok := out.(pagedOutput)
	if !ok || o.PageToken() == "" {
		return out, false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(o.PageToken())
	if err != nil {
		return nil, false, err
	}
	sealed := g.pages.Seal(string(raw), ad)
	if len(sealed) > policy.MaxPageTokenLen {
		return nil, false, errTokenTooLong
	}
	return o.WithPageToken(sealed), true, nil
}
