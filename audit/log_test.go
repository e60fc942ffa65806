package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte("k"), 32)

// memSink is a sink whose failure can be injected: it can fail every write,
// or block until released.
type memSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	err   error
	block chan struct{}
	syncs int
	// While err is set, a write of at most pass bytes still succeeds, and
	// a write that fails puts its first tear bytes in (a torn line).
	pass, tear int
	// syncBlock, when set, makes Sync wait until it is closed, like a
	// disk busy with an fsync.
	syncBlock chan struct{}
	syncErr   error // returned by Sync
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil && len(p) > s.pass {
		n, _ := s.buf.Write(p[:min(s.tear, len(p))])
		return n, s.err
	}
	return s.buf.Write(p)
}

// fail makes every write fail with err from now on; nil heals the sink.
func (s *memSink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// failSync makes every Sync fail with err from now on; nil heals it.
func (s *memSink) failSync(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncErr = err
}

func (s *memSink) Sync() error {
	if s.syncBlock != nil {
		<-s.syncBlock
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncs++
	return s.syncErr
}

func (s *memSink) Close() error { return nil }

func (s *memSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSuffix(s.buf.String(), "\n"), "\n")
}

func openMem(t *testing.T, s *memSink, cfg Config) *Log {
	t.Helper()
	if cfg.Key == nil {
		cfg.Key = testKey
	}
	l := newLog(cfg, s, false, 0, "")
	go l.loop()
	t.Cleanup(func() {
		if s.block != nil {
			select {
			case <-s.block:
			default:
				close(s.block)
			}
		}
		l.Close()
	})
	return l
}

func callRecord(principal, tool string, args ...Arg) Record {
	return Record{Kind: KindCall, RequestID: "r1", Principal: principal, ClientAddr: "127.0.0.1:1", Transport: "http", UserAgent: "test/1", Method: "tools/call", Tool: tool, Args: args}
}

func TestRecordsAreOneLineOfPrintableASCII(t *testing.T) {
	t.Parallel()
	s := &memSink{}
	l := openMem(t, s, Config{})
	hostile := "a\u2028b\u0085c\u202Ed\x1b[31me\nf\"g\\h\xff"
	if err := l.Write(context.Background(), callRecord("alice", hostile, Arg{Name: hostile, Value: hostile})); err != nil {
		t.Fatal(err)
	}
	lines := s.lines()
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	checkLine(t, lines[0])
	var e Entry
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{e.Tool, e.Args[0].Name, e.Args[0].Value} {
		if u, err := strconv.Unquote(got); err != nil || u != hostile {
			t.Fatalf("quoted %q unquotes to %q, %v; want the input back", got, u, err)
		}
	}
}

func checkLine(t *testing.T, line string) {
	t.Helper()
	if !json.Valid([]byte(line)) {
		t.Fatalf("not valid JSON: %q", line)
	}
	for i := 0; i < len(line); i++ {
		if line[i] < 0x20 || line[i] > 0x7e {
			t.Fatalf("byte %#x at %d is not printable ASCII: %.300q", line[i], i, line)
		}
	}
}

// FuzzAuditLine: whatever a client sends as a principal, tool, user agent or
// argument, its record is one line of valid JSON in printable ASCII whose
// quoted strings unquote back to what was sent (up to the cap).
func FuzzAuditLine(f *testing.F) {
	for _, s := range []string{"", "plain", "\u2028", "\u0085", "\u202E", "\x1b[2J", "\xff\xfe", `"}`, `\`, strings.Repeat("é", 400)} {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, principal, tool, value string) {
		s := &memSink{}
		l := newLog(Config{Key: testKey}, s, false, 0, "")
		rec := callRecord(principal, tool, Arg{Name: tool, Value: value})
		rec.UserAgent = value
		if err := l.write(rec); err != nil {
			t.Fatal(err)
		}
		out := s.buf.String()
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Fatalf("not exactly one line: %q", out)
		}
		checkLine(t, strings.TrimSuffix(out, "\n"))
		e, err := ParseLineKey([]byte(strings.TrimSuffix(out, "\n")), testKey)
		if err != nil {
			t.Fatal(err)
		}
		unq := func(q string) string {
			u, err := strconv.Unquote(q)
			if err != nil {
				t.Fatalf("%q does not unquote: %v", q, err)
			}
			return u
		}
		if tool != "" && unq(e.Tool) != capBytes(tool, MaxToolBytes) {
			t.Fatalf("tool does not round-trip")
		}
		if principal != "" && unq(e.Principal) != capBytes(principal, MaxToolBytes) {
			t.Fatalf("principal does not round-trip")
		}
		if unq(e.Args[0].Value) != capBytes(value, MaxArgBytes) || unq(e.Args[0].Name) != capBytes(tool, MaxToolBytes) {
			t.Fatalf("argument does not round-trip")
		}
		if value != "" && unq(e.UserAgent) != capBytes(value, MaxUserAgentBytes) {
			t.Fatalf("user agent does not round-trip")
		}
	})
}

func TestAFailingSinkRefusesEveryRecord(t *testing.T) {
	t.Parallel()
	s := &memSink{err: errors.New("disk full")}
	l := openMem(t, s, Config{})
	for i := 0; i < 1000; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "list_workflows")); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("write %d = %v, want ErrUnavailable", i, err)
		}
	}
}

func TestABlockingSinkFailsWithinTheTimeoutWithoutLeaking(t *testing.T) {
	s := &memSink{block: make(chan struct{})}
	l := openMem(t, s, Config{Timeout: 50 * time.Millisecond})
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := l.Write(context.Background(), callRecord("alice", "list_workflows"))
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("write = %v, want ErrUnavailable", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("write took %s, want about the 50ms timeout", d)
			}
		}()
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+1 {
		t.Fatalf("goroutines %d -> %d: refused writes left goroutines behind", before, after)
	}
}

func TestFsyncAlwaysSyncsBeforeWriteReturns(t *testing.T) {
	t.Parallel()
	s := &memSink{}
	l := openMem(t, s, Config{Fsync: FsyncAlways})
	for i := 0; i < 5; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		syncs := s.syncs
		s.mu.Unlock()
		if syncs != i+1 {
			t.Fatalf("after %d records, %d syncs", i+1, syncs)
		}
	}
}

func TestFsyncIntervalSyncsSoonAfterAWrite(t *testing.T) {
	t.Parallel()
	s := &memSink{}
	l := openMem(t, s, Config{SyncInterval: 20 * time.Millisecond})
	if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.mu.Lock()
		syncs := s.syncs
		s.mu.Unlock()
		if syncs > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no sync within 2s of a write")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestASlowIntervalSyncHoldsUpNoRecord(t *testing.T) {
	t.Parallel()
	s := &memSink{syncBlock: make(chan struct{})}
	l := openMem(t, s, Config{SyncInterval: time.Millisecond, Timeout: time.Second})
	if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a sync has begun, and hangs
	for i := 0; i < 10; i++ {
		start := time.Now()
		if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("a record waited %s behind a sync", d)
		}
	}
	close(s.syncBlock)
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.mu.Lock()
		syncs := s.syncs
		s.mu.Unlock()
		if syncs >= 2 {
			return // the hung sync ended, and the records after it were synced too
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d syncs after the disk came back, want 2", syncs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestARecordIsInTheFileWhenWriteReturns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(Config{Path: path, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
		t.Fatal(err)
	}
	// Another reader sees it at once: it is in the kernel, not a buffer.
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"kind":"call"`) {
		t.Fatalf("the call record is not in the file yet: %q, %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("audit log mode %v, want 0600", st.Mode().Perm())
	}
}

// An fsync policy the writer does not know is refused, not taken for the
// weaker interval.
func TestOpenRefusesAnUnknownFsyncPolicy(t *testing.T) {
	t.Parallel()
	_, err := Open(Config{Path: filepath.Join(t.TempDir(), "audit.log"), Key: NewKey(), Fsync: "Always"})
	if !errors.Is(err, ErrFsyncPolicy) {
		t.Fatalf("Open with fsync %q: %v, want ErrFsyncPolicy", "Always", err)
	}
}

// TestAPipeOrDeviceIsAStream: a FIFO or a device takes records with fsync
// always (fsync on a pipe fails with EINVAL, which made Open fail on its
// own first record and the interval sync fail on every tick), and a FIFO
// that nobody reads is refused at once, where opening it used to hang.
func TestAPipeOrDeviceIsAStream(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "audit.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Open(Config{Path: fifo, Key: testKey})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no reader") {
			t.Fatalf("opening a FIFO nobody reads: %v, want a refusal naming the missing reader", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("opening a FIFO nobody reads hung")
	}

	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, path := range []string{fifo, os.DevNull} {
		l, err := Open(Config{Path: path, Key: testKey, Fsync: FsyncAlways})
		if err != nil {
			t.Fatalf("%s with fsync always: %v", path, err)
		}
		if err := l.Write(context.Background(), Record{Kind: KindCall, Tool: "describe_namespace"}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("%s: close: %v", path, err)
		}
	}
	b, _ := io.ReadAll(r)
	if !bytes.Contains(b, []byte(`"kind":"call"`)) {
		t.Fatalf("the FIFO's reader got %q", b)
	}
}

// TestAFailedIntervalSyncIsSaidInTheLog: a failed fsync may lose the pages
// it could not write while the next one reports success; it used to be
// retried and forgotten. The next record is now preceded by a chain-start
// record saying after which record the loss may be.
func TestAFailedIntervalSyncIsSaidInTheLog(t *testing.T) {
	t.Parallel()
	s := &memSink{syncErr: errors.New("EIO")}
	l := openMem(t, s, Config{SyncInterval: 10 * time.Millisecond})
	if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.mu.Lock()
		syncs := s.syncs
		s.mu.Unlock()
		if syncs > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no sync within 2s of a write")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a tick after the failure
	if err := l.Write(context.Background(), callRecord("alice", "y")); err != nil {
		t.Fatal(err)
	}
	lines := s.lines()
	if len(lines) != 3 || !strings.Contains(lines[1], `"kind":"chain-start"`) || !strings.Contains(lines[1], "fsync of the audit sink failed after seq 1") {
		t.Fatalf("lines after a failed sync:\n%s", strings.Join(lines, "\n"))
	}
}
