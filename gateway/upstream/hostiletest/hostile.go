// Package hostiletest is a hostile upstream MCP server for tests: it speaks
// just enough of MCP over stdio, the 2024-11-05 HTTP+SSE transport and
// streamable HTTP to be connected to, then answers with messages of any
// size, written as they go so that the server itself holds none of them.
//
// It offers one tool, blob, declared read-only. In ModeAnswer a call of it
// is answered with a text of Size bytes; in ModeList the tool list is
// endless, each page Size bytes of tools.
package hostiletest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// Modes.
const (
	ModeAnswer = "answer" // tools/call answers Size bytes of text
	ModeList   = "list"   // tools/list pages of Size bytes, without end
	// ModePing: once its tools are listed, the server sends porthole
	// pings of Size bytes of params, without end (stdio).
	ModePing = "ping"
)

// Server is one hostile upstream.
type Server struct {
	Mode string
	Size int64
	// Event makes a streamable HTTP server answer a call as a server-sent
	// event rather than a JSON body.
	Event bool
	// Standalone makes a streamable HTTP server open the standalone stream
	// a client asks for with GET, and send one event of Size bytes on it.
	Standalone bool
	// Hostile, when set, says whether to be hostile now; while it says
	// no, the server lists its one tool and answers "small".
	Hostile func() bool
}

func (s Server) hostile() bool { return s.Hostile == nil || s.Hostile() }

// Main serves a stdio hostile server and exits when the process was run
// as `PROGRAM hostile-upstream MODE [GATE]`: a test binary calls it first
// in its TestMain to double as one. MODE is "answer:N" or "list:N"; with
// GATE, a file's path, the server is hostile only while that file exists.
func Main() {
	if len(os.Args) < 3 || os.Args[1] != "hostile-upstream" {
		return
	}
	mode, size, ok := strings.Cut(os.Args[2], ":")
	var n int64
	if _, err := fmt.Sscan(size, &n); !ok || err != nil || (mode != ModeAnswer && mode != ModeList && mode != ModePing) {
		fmt.Fprintf(os.Stderr, "hostiletest: mode %q is not answer:N, list:N or ping:N\n", os.Args[2])
		os.Exit(2)
	}
	s := Server{Mode: mode, Size: n}
	if len(os.Args) > 3 {
		gate := os.Args[3]
		s.Hostile = func() bool { _, err := os.Stat(gate); return err == nil }
	}
	if err := s.ServeStdio(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Tool is the definition of the one tool the server offers.
const Tool = `{"name":"blob","description":"Answers a blob.","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true}}`

// answer writes the whole JSON-RPC response to req to w, or reports that
// req needs none.
func (s Server) answer(w io.Writer, req request) (bool, error) {
	if req.ID == nil {
		return false, nil // a notification
	}
	head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,`
	var err error
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		_, err = fmt.Fprintf(w, `%s"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`, head, p.ProtocolVersion)
	case "ping":
		_, err = io.WriteString(w, head+`"result":{}}`)
	case "tools/list":
		if s.Mode != ModeList || !s.hostile() {
			_, err = io.WriteString(w, head+`"result":{"tools":[`+Tool+`]}}`)
			break
		}
		err = s.page(w, head)
	case "tools/call":
		if s.Mode != ModeAnswer || !s.hostile() {
			_, err = io.WriteString(w, head+`"result":{"content":[{"type":"text","text":"small"}]}}`)
			break
		}
		if _, err = io.WriteString(w, head+`"result":{"content":[{"type":"text","text":"`); err == nil {
			if err = fill(w, s.Size); err == nil {
				_, err = io.WriteString(w, `"}]}}`)
			}
		}
	default:
		_, err = io.WriteString(w, head+`"error":{"code":-32601,"message":"method not found"}}`)
	}
	return true, err
}

// page writes a page of the endless tool list: tools of about 1 KiB each,
// Size bytes in all, and a cursor to the next.
func (s Server) page(w io.Writer, head string) error {
	if _, err := io.WriteString(w, head+`"result":{"tools":[`+Tool); err != nil {
		return err
	}
	filler := strings.Repeat("x", 1000)
	var err error
	for n, i := int64(len(Tool)), 0; n < s.Size && err == nil; i++ {
		t := fmt.Sprintf(`,{"name":"t%d","description":"%s","inputSchema":{"type":"object"}}`, i, filler)
		_, err = io.WriteString(w, t)
		n += int64(len(t))
	}
	if err == nil {
		_, err = io.WriteString(w, `],"nextCursor":"more"}}`)
	}
	return err
}

// fill writes n bytes of 'a'.
func fill(w io.Writer, n int64) error {
	chunk := []byte(strings.Repeat("a", 64<<10))
	for n > 0 {
		c := chunk[:min(n, int64(len(chunk)))]
		if _, err := w.Write(c); err != nil {
			return err
		}
		n -= int64(len(c))
	}
	return nil
}

// ServeStdio serves newline-delimited JSON-RPC on r and w until r ends.
// Each request is answered in a goroutine of its own; answers are written
// whole, one at a time.
func (s Server) ServeStdio(r io.Reader, w io.Writer) error {
	var mu sync.Mutex
	bw := bufio.NewWriterSize(w, 64<<10)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req request
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		go func() {
			mu.Lock()
			defer mu.Unlock()
			if ok, err := s.answer(bw, req); ok && err == nil {
				_, _ = bw.WriteString("\n")
				_ = bw.Flush()
			}
		}()
		if req.Method == "tools/list" && s.Mode == ModePing && s.hostile() {
			go s.pings(&mu, bw)
		}
	}
	return sc.Err()
}

// pings writes pings with Size bytes of params until writing fails.
func (s Server) pings(mu *sync.Mutex, bw *bufio.Writer) {
	pad := strings.Repeat("p", int(s.Size))
	for i := 0; ; i++ {
		mu.Lock()
		_, err := fmt.Fprintf(bw, `{"jsonrpc":"2.0","id":"ping-%d","method":"ping","params":{"_meta":{"pad":%q}}}`+"\n", i, pad)
		if err == nil {
			err = bw.Flush()
		}
		mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Streamable is the server over streamable HTTP, at any path: a call is
// answered as a JSON body, or as one event when s.Event is set.
func (s Server) Streamable() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && s.Standalone && s.hostile() {
			w.Header().Set("Content-Type", "text/event-stream")
			bw := bufio.NewWriterSize(w, 64<<10)
			defer bw.Flush()
			_, _ = bw.WriteString("event: message\ndata: ")
			_ = fill(bw, s.Size)
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // no stream of its own
			return
		}
		var req request
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		bw := bufio.NewWriterSize(w, 64<<10)
		defer bw.Flush()
		if s.Event && req.Method == "tools/call" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = bw.WriteString("event: message\ndata: ")
			if _, err := s.answer(bw, req); err == nil {
				_, _ = bw.WriteString("\n\n")
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = s.answer(bw, req)
	})
}

// SSE is the server over the 2024-11-05 HTTP+SSE transport: GET opens the
// stream, whose first event names where to post; every answer is an event
// on the stream.
func (s Server) SSE() http.Handler {
	var (
		mu      sync.Mutex
		streams = map[string]chan request{}
		next    int
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			next++
			id := fmt.Sprint(next)
			reqs := make(chan request, 64)
			streams[id] = reqs
			mu.Unlock()
			defer func() { mu.Lock(); delete(streams, id); mu.Unlock() }()
			w.Header().Set("Content-Type", "text/event-stream")
			bw := bufio.NewWriterSize(w, 64<<10)
			flush := func() { _ = bw.Flush(); w.(http.Flusher).Flush() }
			fmt.Fprintf(bw, "event: endpoint\ndata: %s?session=%s\n\n", r.URL.Path, id)
			flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case req := <-reqs:
					_, _ = bw.WriteString("event: message\ndata: ")
					if _, err := s.answer(bw, req); err != nil {
						return
					}
					_, _ = bw.WriteString("\n\n")
					flush()
				}
			}
		}
		mu.Lock()
		reqs := streams[r.URL.Query().Get("session")]
		mu.Unlock()
		var req request
		if reqs == nil || json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		if req.ID != nil {
			select {
			case reqs <- req:
			case <-r.Context().Done():
			}
		}
	})
}
