package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
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

// ErrBusy is a message porthole could not read because the messages being
// read from every upstream at once already held the roster's
// MaxBytesInFlight, for longer than budgetWait.
var ErrBusy = errors.New("porthole is reading as much from its upstreams at once as it allows (maxBytesInFlight)")

// budgetWait is how long a read waits for the shared budget before it
// fails: long enough for a burst of answers to drain, short beside a call's
// timeout.
const budgetWait = time.Second

// budget is what the messages being read may hold: the set's, shared by
// every upstream, and each upstream's own share of it (half, or one
// message when that is more), so that one upstream that keeps its
// messages large cannot take all of it. An upstream that passes its own
// share has sent more than porthole accepts; one that finds the shared
// budget held by others waits up to budgetWait, then fails with ErrBusy.
type budget struct {
	shared *semaphore.Weighted
	own    *semaphore.Weighted
}

func newBudget(shared *semaphore.Weighted, size, message int64) *budget {
	return &budget{shared: shared, own: semaphore.NewWeighted(max(size/2, message))}
}

func (b *budget) take(n int64) error {
	if b == nil {
		return nil
	}
	if !b.own.TryAcquire(n) {
		return fmt.Errorf("%w: more than its share of maxBytesInFlight in messages under way at once", ErrTooLarge)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budgetWait)
	defer cancel()
	if err := b.shared.Acquire(ctx, n); err != nil {
		b.own.Release(n)
		return ErrBusy
	}
	return nil
}

func (b *budget) give(n int64) {
	if b != nil && n > 0 {
		b.shared.Release(n)
		b.own.Release(n)
	}
}

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
	budget *budget     // nil: no budget
	breach func(error) // told of the first bound passed; may be nil
	// keepOpen: Close does not close r (a child's stdout, which the
	// session ends by closing the child's stdin).
	keepOpen bool

	mu    sync.Mutex
	held  int64 // bytes of the current message, taken from budget
	blank bool  // frameEvent: the line under way holds nothing but '\r'
	err   error
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
	if c, ok := f.r.(io.Closer); ok && !f.keepOpen {
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
	if tail > 0 {
		if err := f.budget.take(tail); err != nil {
			return err
		}
	}
	f.held += tail
	return nil
}

// end is the index in b of the byte that ends the first message ending in
// b, or -1. A stdio message ends at a newline. An event ends at an empty
// line: as the go-sdk reads events, a line ends at '\n', and one that holds
// nothing else but '\r' is empty. That state carries across reads.
func (f *frameReader) end(b []byte) int {
	if f.kind == frameLine {
		return bytes.IndexByte(b, '\n')
	}
	for i, c := range b {
		switch c {
		case '\n':
			if f.blank {
				return i // the next line starts blank again
			}
			f.blank = true
		case '\r':
		default:
			f.blank = false
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
	f.budget.give(f.held)
	f.held = 0
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
	// Only a successful answer is read as a stream of events: the go-sdk
	// reads any other body whole, whatever it says it is.
	kind := frameWhole
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" && resp.StatusCode/100 == 2 {
		kind = frameEvent
	}
	resp.Body = b.u.frames(resp.Body, kind, b.passed)
	if box := liftBoxFrom(r.Context()); box != nil && resp.StatusCode/100 == 2 {
		if id := callID(r); id != nil {
			resp.Body = liftedBody(resp.Body, kind, resp.ContentLength, box, id)
		}
	}
	return resp, nil
}

// Requests an upstream may send porthole: porthole declares no client
// capabilities, so only ping is an upstream's to send, and seldom. Each
// request is held, decoded, until its answer is written, and an upstream
// that stops reading (a child that leaves its stdin unread) keeps them all.
const (
	maxRequestBurst     = 16      // requests in a burst
	requestsPerSecond   = 1       // after a burst
	maxRequestParamSize = 4 << 10 // a ping's params are empty
)

// boundRequests ends the session of an upstream that sends porthole more
// requests than a burst of maxRequestBurst refilled at requestsPerSecond
// (a token bucket over the requests received), or a request whose params
// pass maxRequestParamSize. Notifications pass: they are handled as they
// are read, and hold nothing after.
func boundRequests(passed *breach) mcp.Middleware {
	limit := rate.NewLimiter(requestsPerSecond, maxRequestBurst)
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			var err error
			if !limit.Allow() {
				err = fmt.Errorf("%w: requests of porthole past a burst of %d, then %d a second", ErrTooLarge, maxRequestBurst, requestsPerSecond)
			} else if b, _ := json.Marshal(req.GetParams()); len(b) > maxRequestParamSize {
				err = fmt.Errorf("%w: a request of porthole with params of more than %d bytes", ErrTooLarge, maxRequestParamSize)
			}
			if err != nil {
				passed.set(err)
				return nil, err
			}
			return next(ctx, method, req)
		}
	}
}
