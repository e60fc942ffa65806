package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/policy"
)

// grantee is the caller as grants see it: its principal, and the scopes
// and claims of its OAuth access token, if it has one.
func grantee(ctx context.Context, extra *mcp.RequestExtra) policy.Caller {
	c := policy.Caller{Principal: caller(ctx, extra)}
	var info *auth.TokenInfo
	if extra != nil {
		info = extra.TokenInfo
	}
	if id := oauthIdentity(ctx, info); id != nil {
		c.Scopes, c.Claims = id.Scopes, id.Claims
	}
	return c
}

// granted is the MCP middleware that applies per-principal grants: tools/list
// shows a principal only the tools it may call, and a tools/call of a tool it
// may not call, or of a tool porthole does not have, is refused with a
// sentence before any handler runs. It sits inside the audit middleware, so
// a refusal is recorded as a call with outcome "denied".
func (g *Server) granted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		who := grantee(ctx, req.GetExtra())
		// One policy for the whole call: a reload between the grant's check
		// and the profile's lookup cannot answer it with another file's
		// profile (a file gone grants nothing and names no profile).
		grants := g.grantsNow()
		switch method {
		case "tools/call":
			p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
			if p == nil {
				break
			}
			span := g.link(ctx, "porthole policy")
			defer span.End()
			if sentence := g.upstreamAbsence(p.Name); sentence != "" && grants.AllowsCaller(who, p.Name) {
				// A granted upstream tool that is not served now: say why,
				// rather than let it look like a tool that never existed.
				resultNotesFrom(ctx).outcome = audit.OutcomeToolError
				res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sentence}}}
				res.IsError = true
				return res, nil
			}
			if !g.serves(p.Name) || !grants.AllowsCaller(who, p.Name) {
				resultNotesFrom(ctx).outcome = audit.OutcomeDenied
				span.Refused(string(audit.OutcomeDenied))
				res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
					Text: fmt.Sprintf("The tool %q is not one you may call; tools/list shows the ones you may.", g.quote.EscapeIdentifier(p.Name)),
				}}}
				res.IsError = true
				return res, nil
			}
			span.End()
			resultNotesFrom(ctx).disclosure = grants.DisclosureFor(who)
			return next(ctx, method, req)
		case "tools/list":
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				cp := *l
				cp.Tools = make([]*mcp.Tool, 0, len(l.Tools))
				for _, t := range l.Tools {
					if g.serves(t.Name) && grants.AllowsCaller(who, t.Name) {
						cp.Tools = append(cp.Tools, t)
					}
				}
				return &cp, nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}
