package gateway

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/fastpath"
	"github.com/porthole-dev/porthole/gateway/rpcdecode"
)

// directCalls connects the fast path (gateway/fastpath) to the server: its
// own tools, the upstream tools served now, and the receiving middleware
// around callOwnTool.
func (g *Server) directCalls() *fastpath.Calls {
	return &fastpath.Calls{
		Own:    func(tool string) bool { return g.ownTools[tool] != nil },
		Served: func(tool string) bool { return g.servedHandler(tool) != nil },
		Call:   g.ownToolsChain,
		Impl:   g.impl,
		Envelope: func(r *http.Request) rpcdecode.Envelope {
			env, _ := envelopeFrom(r)
			return env
		},
		Answered: g.metrics.direct.Inc,
		Copied:   noteCopied,
		Failed: func(r *http.Request, err error) {
			g.log.Error("a direct tools/call answer not encoded", zap.String("requestId", requestInfoFrom(r.Context()).RequestID), traceField(r.Context()), zap.Error(err))
		},
	}
}

// callOwnTool is the go-sdk's tools/call method (its Server.callTool) for
// porthole's own tools and the upstream tools served now: the tool's
// handler, and content that is never null.
func (g *Server) callOwnTool(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
	fastpath.NoteHandled(ctx)
	r := req.(*mcp.CallToolRequest)
	h := g.ownTools[r.Params.Name]
	if h == nil {
		// An upstream tool, which the fast path takes as the go-sdk's
		// server would (its callTool): by the handler registered, or,
		// where the tool was withdrawn since, with its error.
		if h = g.servedHandler(r.Params.Name); h == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", r.Params.Name)}
		}
	}
	res, err := h(ctx, r)
	if err == nil && res != nil && res.Content == nil {
		cp := *res
		cp.Content = []mcp.Content{}
		res = &cp
	}
	return res, err
}
