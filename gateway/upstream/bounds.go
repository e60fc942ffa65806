package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Every byte an upstream sends is read through a frameReader: one message
// (a JSON body, a server-sent event, a stdio line) may hold at most the
// entry's MaxMessageBytes, and the messages being read from every upstream
// together at most the roster's MaxBytesInFlight. A hostile upstream can
// otherwise make porthole buffer an answer, an event or a tool list of any
// size (the go-sdk reads a JSON body whole, with no bound). Past either
// bound the read fails, the go-sdk ends the session, the call fails with
// ErrTooLarge's sentence and the upstream is marked down until it connects
// again; porthole's own tools and other upstreams are not touched.

// ErrTooLarge is a message from an upstream past one of porthole's bounds.
var ErrTooLarge = errors.New("the upstream sent more than porthole accepts")

// ErrListTooLarge is a tool list past the entry's MaxListBytes or
// MaxListPages.
var ErrListTooLarge = errors.New("the upstream's tool list is larger than porthole accepts")

// frameKind says where one message of a stream ends.
type frameKind int

const (
	frameWhole frameKind = iota // the whole stream is one message (a JSON body)
	frameLine                   // a stdio message ends at a newline
	frameEvent                  // a server-sent event ends at an empty line
)

// frameSlack is read past a message's bound by the go-sdk's own
// buffering readers before they see the message end; their own bounds are
// set this far past porthole's, so that porthole's, which gives the
// sentence, is met first.
const frameSlack = 64 << 10

// frameReader counts the bytes of the message being read, takes them from
// the shared budget while the message is incomplete, and gives them back
// when it ends (or the stream does). It fails the read, and every read
// after, once a message passes limit or the budget is spent.
type frameReader struct {
	r      io.Reader
	kind   frameKind
	limit  int64
	budget *semaphore.Weighted // nil: no budget
	breach func(error)         // told of the first bound passed; may be nil

	mu     sync.Mutex
	held   int64 // bytes of the current message, taken from budget
	lastCR bool  // frameEvent: the last byte read was '\r'
	atEOL  bool  // frameEvent: the last byte read ended a line
	err    error
}

// Read is called by one reader at a time; Close may be called while a Read
// waits, and must not wait for it: closing the stream is what ends it.
func (f *frameReader) Read(p []byte) (int, error) {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := f.r.Read(p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err // closed while the read waited
	}
	if berr := f.count(p[:n]); berr != nil {
		f.fail(berr)
		return 0, berr
	}
	if err != nil {
		// The stream is over (or broken): nothing of it is held any more.
		f.release()
	}
	return n, err
}

// Close closes the stream when it can be closed, and gives back what the
// message under way held.
func (f *frameReader) Close() error {
	var err error
	if c, ok := f.r.(io.Closer); ok {
		err = c.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.release()
	if f.err == nil {
		f.err = errors.New("read after close")
	}
	return err
}

// count accounts for b: every message that ends in it must be within the
// bound, and what follows the last end is the message under way, taken
// from the budget.
func (f *frameReader) count(b []byte) error {
	for f.kind != frameWhole {
		i := f.end(b)
		if i < 0 {
			break
		}
		if f.held+int64(i) > f.limit {
			return f.tooLarge()
		}
		f.release()
		b = b[i+1:]
	}
	tail := int64(len(b))
	if f.held+tail > f.limit {
		return f.tooLarge()
	}
	if tail > 0 && f.budget != nil && !f.budget.TryAcquire(tail) {
		return fmt.Errorf("%w: porthole's budget for the messages it reads from every upstream at once (maxBytesInFlight) is spent", ErrTooLarge)
	}
	f.held += tail
	return nil
}

// end is the index in b of the byte that ends the first message ending in
// b, or -1. A stdio message ends at a newline. An event ends at an empty
// line, and a line ends at "\r\n", "\n" or "\r", as the event-stream
// format says; that state carries across reads.
func (f *frameReader) end(b []byte) int {
	if f.kind == frameLine {
		return bytes.IndexByte(b, '\n')
	}
	for i, c := range b {
		switch {
		case c == '\n' && f.lastCR:
			// The second byte of "\r\n": the line ended at the '\r'.
			f.lastCR = false
		case c == '\n' || c == '\r':
			wasEOL := f.atEOL
			f.atEOL, f.lastCR = !wasEOL, c == '\r'
			if wasEOL {
				// An empty line: the event ends here, and the next
				// line starts a new one (a "\r\n" ending's '\n' is
				// passed over by lastCR, whatever atEOL says).
				return i
			}
		default:
			f.atEOL, f.lastCR = false, false
		}
	}
	return -1
}

func (f *frameReader) tooLarge() error {
	what := map[frameKind]string{frameWhole: "an answer", frameLine: "a message", frameEvent: "an event"}[f.kind]
	return fmt.Errorf("%w: %s of more than %d bytes (maxMessageBytes)", ErrTooLarge, what, f.limit)
}

// fail ends the stream with err and tells of it once.
func (f *frameReader) fail(err error) {
	f.err = err
	f.release()
	if f.breach != nil {
		f.breach(err)
	}
}

func (f *frameReader) release() {
	if f.held > 0 && f.budget != nil {
		f.budget.Release(f.held)
		f.held = 0
	}
}

// boundedBodies wraps every response body from the upstream in a
// frameReader: an event stream by event, anything else whole.
type boundedBodies struct {
	u      *Upstream
	passed *breach
	next   http.RoundTripper
}

func (b boundedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	kind := frameWhole
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		kind = frameEvent
	}
	resp.Body = b.u.frames(resp.Body, kind, b.passed)
	return resp, nil
}
