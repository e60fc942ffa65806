package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/rpcdecode"
	"github.com/porthole-dev/porthole/redact"
)

// ServeStdio serves MCP over in and out until in closes or ctx ends. The
// caller is principal "local". Nothing else may write to out: it is the
// protocol stream. Every message passes the wire redactor on its way out.
func (g *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	ctx = withRequestInfo(ctx, requestInfo{Transport: "stdio"})
	w := &lockedWriter{w: redact.NewLineWriter(out, g.redactor), closer: out}
	screened := &stdioIDs{in: bufio.NewReaderSize(in, 64<<10), closer: in, out: w}
	return g.mcp.Run(ctx, &mcp.IOTransport{Reader: screened, Writer: w})
}

// lockedWriter writes one message at a time: the go-sdk's answers and the
// refusals stdioIDs writes share the stream.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.closer.Close() }

// maxStdioLine is the longest line stdioIDs reads whole to screen: the
// go-sdk's own bound on a stdio message, past which it ends the session.
const maxStdioLine = mcp.DefaultMaxLineLength

// stdioIDs passes on the messages a stdio client sends, one a line, and
// answers itself, with id null, a request whose id is not a string, null
// or an integer every JSON reader holds exactly, as the HTTP front does
// (rpcdecode.ValidID): the go-sdk reads ids as float64, and would answer
// 1.5 as 1. A line it cannot read as a JSON object, or one past
// maxStdioLine, passes on as it is, for the go-sdk to refuse.
type stdioIDs struct {
	in     *bufio.Reader
	closer io.Closer
	out    io.Writer
	rest   []byte // what is left of the line being passed on
	long   bool   // passing on a line past maxStdioLine, to its end
}

func (s *stdioIDs) Read(p []byte) (int, error) {
	for len(s.rest) == 0 {
		line, err := s.line()
		if len(line) > 0 && !s.refused(line) {
			s.rest = line
		}
		if err != nil && len(s.rest) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

// line reads the next line whole, up to maxStdioLine; past it, the rest
// of that line comes in pieces, unscreened.
func (s *stdioIDs) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := s.in.ReadSlice('\n')
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			s.long = false
			return line, err
		}
		if s.long || len(line) > maxStdioLine {
			s.long = true
			return line, nil
		}
	}
}

// refused reports whether line is a request whose id is not one porthole
// answers under, answering it if so.
func (s *stdioIDs) refused(line []byte) bool {
	if s.long {
		return false
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &msg) != nil || rpcdecode.ValidID(msg.ID) {
		return false
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": rpcdecode.BadID}})
	_, _ = s.out.Write(append(b, '\n'))
	return true
}

func (s *stdioIDs) Close() error { return s.closer.Close() }
