package gateway

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/redact"
)

// ServeStdio serves MCP over in and out until in closes or ctx ends. The
// caller is principal "local". Nothing else may write to out: it is the
// protocol stream. Every message passes the wire redactor on its way out.
func (g *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	ctx = withRequestInfo(ctx, requestInfo{Transport: "stdio"})
	return g.mcp.Run(ctx, &mcp.IOTransport{Reader: in, Writer: redact.NewLineWriter(out, g.redactor)})
}
