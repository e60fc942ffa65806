package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/fastpath"
)

// followRequest is the MCP middleware that ends a call's context when its
// HTTP request ends (the client hung up), which the go-sdk's detached
// handler context would not (a call answered directly already runs on the
// request's context, and is passed on as it is). It runs first, so
// everything after it, the Temporal read included, sees the cancellation; the audit middleware
// writes its result record on a context of its own. Being first, it is
// also where a tool call's goroutine grows its stack (see fastpath.GrowStack).
func followRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			fastpath.GrowStack()
		}
		reqCtx := requestInfoFrom(ctx).request
		if reqCtx == nil || reqCtx.Done() == ctx.Done() {
			// No request to follow, or ctx already ends with it (a call
			// answered directly runs on the request's own context).
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(reqCtx, cancel)
		defer stop()
		return next(ctx, method, req)
	}
}
