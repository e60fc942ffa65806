package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/porthole-dev/porthole/gateway/upstream/hostiletest"
)

// readAll reads a frameReader of kind over s, a byte at a time when
// oneByte, and returns what it read and the error that ended it.
func readAll(kind frameKind, limit int64, budget *budget, s string, oneByte bool) (string, error) {
	var r io.Reader = strings.NewReader(s)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	f := &frameReader{r: r, kind: kind, limit: limit, budget: budget}
	b, err := io.ReadAll(f)
	return string(b), err
}

func TestAFrameReaderBoundsEachMessageNotTheStream(t *testing.T) {
	t.Parallel()
	// The bound is 11 bytes a message, its ending not counted.
	ten := strings.Repeat("x", 10)
	cases := []struct {
		name  string
		kind  frameKind
		input string
		fails bool
	}{
		{"lines of ten bytes, many of them", frameLine, strings.Repeat(ten+"\n", 100), false},
		{"a line of eleven bytes and its newline", frameLine, ten + "x\n" + ten + "x\n", false},
		{"a line of twelve bytes", frameLine, ten + "\n" + ten + "xx\n", true},
		{"a last line of twelve bytes without its newline", frameLine, ten + "\n" + ten + "xx", true},
		{"events of ten bytes ended by \\n\\n", frameEvent, strings.Repeat(ten+"\n\n", 100), false},
		{"events of ten bytes ended by \\r\\n\\r\\n", frameEvent, strings.Repeat("xxxxxxxx\r\n\r\n", 100), false},
		{"a lone \\r ends no line, as the go-sdk reads events", frameEvent, strings.Repeat("xxxxxxxxx\r\r", 100), true},
		{"a line of \\r alone is empty", frameEvent, strings.Repeat("xxxxxxxx\n\r\n", 100), false},
		{"an event of two lines of five bytes", frameEvent, strings.Repeat("xxxx\nxxxx\n\n", 100), false},
		{"an event of three lines of five bytes", frameEvent, "xxxx\nxxxx\nxxxx\n\n", true},
		{"an event whose lines end in \\r\\n, past the bound", frameEvent, "xxxx\r\nxxxx\r\nx\r\n\r\n", true},
		{"a whole body of ten bytes", frameWhole, ten, false},
		{"a whole body of eleven bytes, newlines and all", frameWhole, "xxxx\n\nxxxx\n\n", true},
	}
	for _, c := range cases {
		for _, oneByte := range []bool{false, true} {
			t.Run(c.name+map[bool]string{true: ", a byte at a time"}[oneByte], func(t *testing.T) {
				budget := newBudget(semaphore.NewWeighted(1<<20), 1<<20, 11)
				got, err := readAll(c.kind, 11, budget, c.input, oneByte)
				if c.fails {
					if !errors.Is(err, ErrTooLarge) {
						t.Fatalf("read %d bytes, err %v; want ErrTooLarge", len(got), err)
					}
				} else if err != nil || got != c.input {
					t.Fatalf("read %q, %v; want all of it", got, err)
				}
				if !free(budget, 1<<20) {
					t.Error("the budget was not given back whole")
				}
			})
		}
	}
}

// free reports whether all size bytes of b are free, shared and own.
func free(b *budget, size int64) bool {
	if !b.shared.TryAcquire(size) {
		return false
	}
	b.shared.Release(size)
	if !b.own.TryAcquire(size / 2) {
		return false
	}
	b.own.Release(size / 2)
	return true
}

func TestAFrameReaderTakesFromTheBudgetAndGivesBack(t *testing.T) {
	t.Parallel()
	shared := semaphore.NewWeighted(100)
	mine, other := newBudget(shared, 100, 10), newBudget(shared, 100, 10)
	// An incomplete message holds its bytes until it ends.
	pr, pw := io.Pipe()
	stdout := &closeRecorder{Reader: pr}
	f := &frameReader{r: stdout, kind: frameLine, limit: 1000, budget: mine, keepOpen: true}
	go func() { _, _ = pw.Write([]byte(strings.Repeat("x", 40))) }()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if shared.TryAcquire(61) {
		t.Fatal("40 bytes under way left more than 60 of 100 in the budget")
	}
	// One upstream takes at most its share, half the budget: past it, it
	// has sent more than porthole accepts.
	_, err := readAll(frameLine, 1000, mine, strings.Repeat("y", 11), false)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "share of maxBytesInFlight") {
		t.Fatalf("a read past the upstream's share: %v", err)
	}
	// Another waits for the shared budget, then fails with ErrBusy.
	hold := newBudget(shared, 100, 10)
	if err := hold.take(50); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = readAll(frameLine, 1000, other, strings.Repeat("z", 20), false)
	if !errors.Is(err, ErrBusy) || time.Since(start) < budgetWait/2 {
		t.Fatalf("a read past the shared budget: %v after %s", err, time.Since(start))
	}
	hold.give(50)
	// The message ends: its bytes come back.
	go func() { _, _ = pw.Write([]byte("\n")) }()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if !free(mine, 100) {
		t.Fatal("the ended message's bytes were not given back")
	}
	// Closing a stream under way gives back what it held, and leaves a
	// child's stdout open.
	go func() { _, _ = pw.Write([]byte(strings.Repeat("x", 40))) }()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !free(mine, 100) {
		t.Fatal("closing did not give back the message under way")
	}
	if stdout.closed {
		t.Fatal("Close closed what it was told to keep open")
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// hostileUpstream starts a hostile server of the transport and returns
// the entry that names it, with bounds of 1 MiB.
func hostileUpstream(t *testing.T, transport string, srv hostiletest.Server) Entry {
	t.Helper()
	e := Entry{Name: "hostile", Transport: transport, Timeout: 20 * time.Second, Tools: named("blob"),
		MaxMessageBytes: 1 << 20, MaxListBytes: 1 << 20}
	switch transport {
	case TransportStdio:
		e.Command, e.Args = os.Args[0], []string{"hostile-upstream", srv.Mode + ":" + strconv.FormatInt(srv.Size, 10)}
	case TransportSSE:
		hs := httptest.NewServer(srv.SSE())
		t.Cleanup(hs.Close)
		e.URL = hs.URL + "/sse"
	default:
		hs := httptest.NewServer(srv.Streamable())
		t.Cleanup(hs.Close)
		e.URL = hs.URL + "/mcp"
	}
	return e
}

// An answer, an event or a stdio line past maxMessageBytes fails the
// call with ErrTooLarge's sentence and marks the upstream down, and the
// upstream connects again after.
func TestAnAnswerPastItsBoundFailsTheCallAndMarksTheUpstreamDown(t *testing.T) {
	for _, c := range []struct {
		name      string
		transport string
		event     bool
	}{
		{"stdio", TransportStdio, false},
		{"sse", TransportSSE, false},
		{"streamable, a JSON body", TransportStreamable, false},
		{"streamable, an event", TransportStreamable, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := hostileUpstream(t, c.transport, hostiletest.Server{Mode: hostiletest.ModeAnswer, Size: 64 << 20, Event: c.event})
			_, u, _ := startSet(t, e, os.LookupEnv)
			waitFor(t, "the upstream to connect", func() bool { return u.Status().State == StateUp })
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() { _, errs[i] = u.Call(context.Background(), "blob", map[string]any{}) })
			}
			wg.Wait()
			for _, err := range errs {
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "maxMessageBytes") {
					t.Errorf("a call answered past the bound: %v; want ErrTooLarge naming maxMessageBytes", err)
				}
			}
			waitFor(t, "the upstream to be marked down", func() bool {
				s := u.Status()
				return s.Restarts > 0 || (s.State == StateDown && strings.Contains(s.Reason, "maxMessageBytes"))
			})
			waitFor(t, "the upstream to connect again", func() bool { return u.Status().State == StateUp })
		})
	}
}

// A tool list past maxListBytes, over pages each within maxMessageBytes,
// is not read whole: the upstream does not connect, and says why.
func TestAToolListPastItsBoundIsNotRead(t *testing.T) {
	for _, transport := range []string{TransportStdio, TransportSSE, TransportStreamable} {
		t.Run(transport, func(t *testing.T) {
			e := hostileUpstream(t, transport, hostiletest.Server{Mode: hostiletest.ModeList, Size: 256 << 10})
			if err := e.check(); err != nil {
				t.Fatal(err)
			}
			r := &Roster{Upstreams: []Entry{e}}
			if err := r.Resolve(os.LookupEnv); err != nil {
				t.Fatal(err)
			}
			set, err := NewSet(r, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = set.Upstreams()[0].Offered(context.Background())
			if !errors.Is(err, ErrListTooLarge) || !strings.Contains(err.Error(), "maxListBytes") {
				t.Fatalf("reading an endless list: %v; want ErrListTooLarge naming maxListBytes", err)
			}
			r.Upstreams[0].MaxListBytes, r.Upstreams[0].MaxListPages = 256<<20, 3
			set, _ = NewSet(r, Options{})
			set.Start(context.Background())
			t.Cleanup(set.Close)
			u := set.Upstreams()[0]
			waitFor(t, "the upstream to be marked down for its pages", func() bool {
				return strings.Contains(u.Status().Reason, "maxListPages")
			})
		})
	}
}

// An error body is read whole, within the bound, whatever it says it is:
// the go-sdk reads it whole.
func TestAnErrorBodyIsBoundedWhateverItsType(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusBadRequest)
		for range 1 << 16 {
			if _, err := io.WriteString(w, "data: x\n\n"); err != nil {
				return
			}
		}
	}))
	t.Cleanup(hs.Close)
	e := Entry{Name: "hostile", Transport: TransportStreamable, URL: hs.URL, Timeout: 20 * time.Second, Tools: named("blob"), MaxMessageBytes: 64 << 10}
	r := &Roster{Upstreams: []Entry{e}}
	if err := r.Resolve(os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	set, _ := NewSet(r, Options{})
	_, err := set.Upstreams()[0].Offered(context.Background())
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "an answer of more than 65536 bytes") {
		t.Fatalf("connecting to an upstream whose error body has no end: %v", err)
	}
}

// A standalone stream past its bound ends the session (the go-sdk would
// open the stream again and keep the session), and pings without end from
// an upstream end it too: each is held until its answer is written.
func TestWhatAnUpstreamSendsUnaskedEndsTheSessionPastItsBound(t *testing.T) {
	for _, c := range []struct {
		name, transport, reason string
		srv                     hostiletest.Server
	}{
		{"a standalone stream's event", TransportStreamable, "maxMessageBytes", hostiletest.Server{Mode: hostiletest.ModeAnswer, Size: 8 << 20, Standalone: true}},
		{"pings without end", TransportStdio, "requests of porthole past a burst of 16", hostiletest.Server{Mode: hostiletest.ModePing, Size: 16}},
		{"a ping of 64 KiB", TransportStdio, "params of more than", hostiletest.Server{Mode: hostiletest.ModePing, Size: 64 << 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Pinned from the definition itself, not by reading it
			// from the upstream: what it sends unasked could end that
			// reading first.
			var tool mcp.Tool
			if err := json.Unmarshal([]byte(hostiletest.Tool), &tool); err != nil {
				t.Fatal(err)
			}
			pin, err := Digest(&tool)
			if err != nil {
				t.Fatal(err)
			}
			e := hostileUpstream(t, c.transport, c.srv)
			e.Tools = []Pin{{Name: "blob", SHA256: pin}}
			r := &Roster{Upstreams: []Entry{e}}
			if err := r.Upstreams[0].check(); err != nil {
				t.Fatal(err)
			}
			if err := r.Resolve(os.LookupEnv); err != nil {
				t.Fatal(err)
			}
			set, err := NewSet(r, Options{})
			if err != nil {
				t.Fatal(err)
			}
			set.Start(context.Background())
			t.Cleanup(set.Close)
			u := set.Upstreams()[0]
			waitFor(t, "the upstream to be marked down for "+c.reason, func() bool {
				return strings.Contains(u.Status().Reason, c.reason)
			})
		})
	}
}
