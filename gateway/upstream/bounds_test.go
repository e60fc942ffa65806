package upstream

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/porthole-dev/porthole/gateway/upstream/hostiletest"
)

// readAll reads a frameReader of kind over s, a byte at a time when
// oneByte, and returns what it read and the error that ended it.
func readAll(kind frameKind, limit int64, budget *semaphore.Weighted, s string, oneByte bool) (string, error) {
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
		{"events of ten bytes ended by \\r\\r", frameEvent, strings.Repeat("xxxxxxxxx\r\r", 100), false},
		{"an event of two lines of five bytes", frameEvent, strings.Repeat("xxxx\nxxxx\n\n", 100), false},
		{"an event of three lines of five bytes", frameEvent, "xxxx\nxxxx\nxxxx\n\n", true},
		{"an event whose lines end in \\r\\n, past the bound", frameEvent, "xxxx\r\nxxxx\r\nx\r\n\r\n", true},
		{"a whole body of ten bytes", frameWhole, ten, false},
		{"a whole body of eleven bytes, newlines and all", frameWhole, "xxxx\n\nxxxx\n\n", true},
	}
	for _, c := range cases {
		for _, oneByte := range []bool{false, true} {
			t.Run(c.name+map[bool]string{true: ", a byte at a time"}[oneByte], func(t *testing.T) {
				budget := semaphore.NewWeighted(1 << 20)
				got, err := readAll(c.kind, 11, budget, c.input, oneByte)
				if c.fails {
					if !errors.Is(err, ErrTooLarge) {
						t.Fatalf("read %d bytes, err %v; want ErrTooLarge", len(got), err)
					}
				} else if err != nil || got != c.input {
					t.Fatalf("read %q, %v; want all of it", got, err)
				}
				if !budget.TryAcquire(1 << 20) {
					t.Error("the budget was not given back whole")
				}
			})
		}
	}
}

func TestAFrameReaderTakesFromTheBudgetAndGivesBack(t *testing.T) {
	t.Parallel()
	budget := semaphore.NewWeighted(100)
	// An incomplete message holds its bytes until it ends.
	pr, pw := io.Pipe()
	f := &frameReader{r: pr, kind: frameLine, limit: 1000, budget: budget}
	go func() { _, _ = pw.Write([]byte(strings.Repeat("x", 60))) }()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if budget.TryAcquire(41) {
		t.Fatal("60 bytes under way left more than 40 of 100 in the budget")
	}
	// A second reader cannot take past what is left.
	_, err := readAll(frameLine, 1000, budget, strings.Repeat("y", 50), false)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "maxBytesInFlight") {
		t.Fatalf("a read past the budget: %v", err)
	}
	// The message ends: its bytes come back.
	go func() { _, _ = pw.Write([]byte("\n")) }()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if !budget.TryAcquire(100) {
		t.Fatal("the ended message's bytes were not given back")
	}
	budget.Release(100)
	// Closing a body under way gives back what it held.
	go func() { _, _ = pw.Write([]byte(strings.Repeat("x", 60))) }()
	if _, err := f.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !budget.TryAcquire(100) {
		t.Fatal("closing did not give back the message under way")
	}
}

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
