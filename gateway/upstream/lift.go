package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A long text in a streamable HTTP upstream's answer to a tools/call is
// lifted out of the message before the go-sdk decodes it, and put back
// when the call returns. The go-sdk reads a result three times over (a
// depth check, the message, then the result again), in a general decoder:
// for an answer of a megabyte that was more CPU than all of porthole's
// own work on it. Lifting replaces each JSON string literal at
// result.content[i].text with a short placeholder literal, only in a
// response to the call the request carried (its id), and keeps the
// literal decoded (once, as the go-sdk decodes a string: invalid UTF-8
// and a surrogate half without its pair become U+FFFD) in the call's
// liftBox; the go-sdk decodes the rest as before, checks and all, and
// Call swaps each placeholder it finds in a text block for its text. A
// literal that is no JSON string (a control character, a bad escape)
// leaves the whole message as it was, for the go-sdk to refuse.
//
// A placeholder holds a NUL and a nonce drawn for the call, which never
// leaves porthole, so an upstream cannot write one that resolves: a text
// that looks like one is served as the text it is. A message porthole's
// scan does not follow (another shape, a key written with escapes) is
// left as it is, for the go-sdk to read as before. Stdio and legacy SSE
// answers arrive on a stream that no call owns, and are not lifted.
// TestLiftedTextsReadAsTheGoSDKReadsThem and its fuzz target hold the
// results to the go-sdk's own reading.

// minLifted is the shortest literal lifted: below it, lifting saves less
// than it costs.
const minLifted = 1 << 10

// liftBox holds the texts lifted from one call's answer.
type liftBox struct {
	prefix string // every placeholder's decoded text begins with it
	// limit bounds the bytes lifted into the box, as maxMessageBytes
	// bounds one message: an answer holds no more, and an upstream that
	// sends more messages carrying the call's id than the one the go-sdk
	// takes for the answer cannot make porthole keep more.
	limit  int64
	mu     sync.Mutex
	texts  []string // decoded, by number
	lifted int64
}

type liftKey struct{}

// withLiftBox is ctx carrying a new liftBox for one call, which keeps at
// most limit bytes.
func withLiftBox(ctx context.Context, limit int64) (context.Context, *liftBox) {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read does not fail
	box := &liftBox{prefix: "\x00porthole-lift:" + hex.EncodeToString(nonce[:]) + ":", limit: limit}
	return context.WithValue(ctx, liftKey{}, box), box
}

func liftBoxFrom(ctx context.Context) *liftBox {
	box, _ := ctx.Value(liftKey{}).(*liftBox)
	return box
}

// reserve takes n bytes of the box's limit, or reports that they would
// pass it.
func (b *liftBox) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lifted+n > b.limit {
		return false
	}
	b.lifted += n
	return true
}

// keep stores a text and returns its placeholder, as a JSON literal.
func (b *liftBox) keep(text string) []byte {
	textsLifted.Add(1)
	b.mu.Lock()
	n := len(b.texts)
	b.texts = append(b.texts, text)
	b.mu.Unlock()
	// The prefix's NUL is written \u0000; the rest is plain ASCII.
	return []byte(`"\u0000` + b.prefix[1:] + strconv.Itoa(n) + `"`)
}

// textsLifted counts the texts lifted, for the tests that show lifting
// ran.
var textsLifted atomic.Int64

// restore puts each lifted text back into res's text blocks.
func (b *liftBox) restore(res *mcp.CallToolResult) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.texts) == 0 {
		return
	}
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		rest, ok := strings.CutPrefix(tc.Text, b.prefix)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || n >= len(b.texts) {
			continue
		}
		tc.Text = b.texts[n]
	}
}

// liftedBody wraps a response body to a tools/call so that its messages
// reach the go-sdk with their long texts lifted into box: a JSON body
// whole, an event stream line by line (an event's data on one line, as
// every MCP server writes it, is one message).
func liftedBody(body io.ReadCloser, kind frameKind, size int64, box *liftBox, id []byte) io.ReadCloser {
	l := &liftingBody{src: body, kind: kind, size: size, box: box, id: id}
	if kind == frameEvent {
		l.lines = bufio.NewReaderSize(body, 64<<10)
	}
	return l
}

type liftingBody struct {
	src   io.ReadCloser
	kind  frameKind
	size  int64 // the body's Content-Length, or -1
	box   *liftBox
	id    []byte
	lines *bufio.Reader // an event stream's, by line
	out   []byte        // read, lifted, not yet passed on
	err   error         // what the source ended with, once out is passed on
}

func (l *liftingBody) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.fill()
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

// fill reads the next message (the whole body, or one event) into out,
// lifted.
func (l *liftingBody) fill() {
	if l.kind != frameEvent {
		buf := liftBuffers.Get().(*[]byte)
		msg, err := readBody((*buf)[:0], l.src, min(l.size, l.box.limit))
		if err != nil {
			// A bound passed, or the stream broke: the go-sdk gets the
			// error, and nothing of a message it could not have read
			// whole anyway (nor is the buffer kept).
			l.err = err
			return
		}
		l.err = io.EOF
		var lifted bool
		if l.out, lifted = l.box.lift(msg, l.id); !lifted {
			// The body itself goes to the go-sdk: a copy, so that the
			// buffer can be used again.
			l.out = bytes.Clone(msg)
		}
		if *buf = msg; cap(msg) <= maxLiftBuffer {
			liftBuffers.Put(buf)
		}
		return
	}
	l.out, l.err = l.nextEvent()
}

// nextEvent reads the next event, whole, and returns it with its data
// lifted where the go-sdk will decode that data as a message: an event
// named message, or not named, with one data line (the go-sdk skips
// events of other names, and joins several data lines, which no scan of
// one line could follow). A read that fails past a bound ends with the
// error alone, as for a JSON body.
func (l *liftingBody) nextEvent() ([]byte, error) {
	var lines [][]byte
	data, name := -1, ""
	datas := 0
	for {
		line, err := l.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		field := bytes.TrimRight(line, "\r\n")
		key, value, _ := bytes.Cut(field, []byte(":"))
		switch {
		case len(field) == 0:
		case string(key) == "event":
			name = string(bytes.TrimSpace(value))
		case string(key) == "data":
			data, datas = len(lines), datas+1
		}
		lines = append(lines, line)
		if len(field) == 0 || err != nil {
			if data >= 0 && datas == 1 && (name == "" || name == "message") {
				lines[data] = l.liftData(lines[data])
			}
			return bytes.Join(lines, nil), err
		}
	}
}

// liftData is a data line with its message lifted, or as it is.
func (l *liftingBody) liftData(line []byte) []byte {
	_, value, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
	lifted, ok := l.box.lift(bytes.TrimSpace(value), l.id)
	if !ok {
		return line
	}
	return append(append([]byte("data: "), lifted...), '\n')
}

// liftBuffers are the buffers a JSON body is read into, kept for the next
// body: what is lifted from one is decoded out of it, and the rest is a
// short message (a body of a megabyte read into a new buffer grown by
// doubling was much of the garbage of a call).
var liftBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxLiftBuffer is the largest buffer kept for reuse.
const maxLiftBuffer = 4 << 20

// readBody appends r, to its end, to dst: in room for size bytes at
// once, the size the body said it has within the message bound, and in
// steps a quarter of what is read after (the frameReader beneath bounds
// the whole).
func readBody(dst []byte, r io.Reader, size int64) ([]byte, error) {
	if size > 0 {
		dst = slices.Grow(dst, int(size)+1)
	}
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, max(32<<10, len(dst)/4))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// readLine reads one line, whole, into a slice of its own.
func (l *liftingBody) readLine() ([]byte, error) {
	var line []byte
	for {
		part, err := l.lines.ReadSlice('\n')
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func (l *liftingBody) Close() error { return l.src.Close() }

// callID is the id of r's JSON-RPC request when r posts a tools/call, or
// nil.
func callID(r *http.Request) []byte {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var req struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&req); err != nil || req.Method != "tools/call" || len(req.ID) == 0 {
		return nil
	}
	return req.ID
}

// lift is msg with each text literal of minLifted bytes or more at
// result.content[i].text replaced by a placeholder kept in b, in a new
// slice, when msg is a JSON-RPC response whose id is id; otherwise msg
// as it is, and lifted is false.
func (b *liftBox) lift(msg, id []byte) (out []byte, lifted bool) {
	if len(msg) < minLifted {
		return msg, false
	}
	spans, ok := textSpans(msg, id)
	if !ok || len(spans) == 0 {
		return msg, false
	}
	// Every literal is decoded before any is lifted: one that is no JSON
	// string leaves the message whole, for the go-sdk to refuse, even
	// where the result it reads would not hold that literal (a second
	// "result" member, a text member of an image). So does a message
	// whose texts would take the box past its limit.
	decoded := make([]string, len(spans))
	var total int64
	for i, s := range spans {
		total += int64(s[1] - s[0])
		if decoded[i], ok = unquote(msg[s[0]:s[1]]); !ok {
			return msg, false
		}
	}
	if !b.reserve(total) {
		return msg, false
	}
	size := len(msg)
	for _, s := range spans {
		size -= s[1] - s[0] - 128 // a placeholder is shorter than 128 bytes
	}
	out = make([]byte, 0, size)
	last := 0
	for i, s := range spans {
		out = append(out, msg[last:s[0]]...)
		out = append(out, b.keep(decoded[i])...)
		last = s[1]
	}
	return append(out, msg[last:]...), true
}
