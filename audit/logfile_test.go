package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachReadsTheLinesSplitWould: a file walked line by line gives the
// lines its contents split at newlines give (the last newline starting no
// line), says which is last, and cuts a line past maxLineBytes.
func TestEachReadsTheLinesSplitWould(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxLineBytes+10)
	for _, content := range []string{"", "\n", "a", "a\n", "a\n\n", "a\nb", "a\nb\n", "\n\na\n", long + "\nb\n", "a\n" + long} {
		path := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var got []string
		lastAt := -1
		err := (&logFile{path: path}).each(func(i int, line []byte, last bool) error {
			if i != len(got) {
				t.Fatalf("index %d at line %d", i, len(got))
			}
			got = append(got, string(line))
			if last {
				lastAt = i
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var split []string
		if content != "" {
			for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
				split = append(split, l[:min(len(l), maxLineBytes)])
			}
		}
		if strings.Join(got, "|") != strings.Join(split, "|") || len(got) != len(split) || lastAt != len(split)-1 {
			t.Errorf("%.20q: %d lines, last at %d; want %d", content, len(got), lastAt, len(split))
		}
	}
}

// TestVerifyingATrailTakesMemoryIndependentOfItsSize: a 64 MB log is
// verified with the heap staying under 32 MB: the files are walked, never
// read whole (a 405 MB log took 863 MB when they were; docs/performance.md).
func TestVerifyingATrailTakesMemoryIndependentOfItsSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MB")
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	key := []byte(strings.Repeat("k", 64))
	l, err := Open(Config{Path: path, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64_000; i++ {
		if err := l.Write(context.Background(), Record{Kind: KindCall, RequestID: strconv.Itoa(i), Principal: "agent", Transport: "http",
			Method: "tools/call", Tool: "describe_workflow", Args: []Arg{{Name: "workflowId", Value: strings.Repeat("w", 900)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() < 64<<20 {
		t.Fatalf("the log is %d bytes, want 64 MB", st.Size())
	}
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	v, err := Verify([]string{path}, key)
	close(done)
	if err != nil || !v.OK() {
		t.Fatalf("verify: %v %+v", err, v)
	}
	if p := peak.Load(); p > 32<<20 {
		t.Fatalf("verifying a 64 MB log took %d MB of heap", p>>20)
	}
}

// TestAWalkDecidesWhetherTheLogEndsMidLine: a log porthole is still
// writing can end mid-line when it is first looked at and have finished
// the line when it is walked; the walk, not the first look, says whether
// the last line is cut short.
func TestAWalkDecidesWhetherTheLogEndsMidLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, err := readLogFile(path)
	if err != nil || !f.partial {
		t.Fatalf("a file ending mid-line: partial %v, %v", f.partial, err)
	}
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("c\nd\n")
	fh.Close()
	var lines []string
	if err := f.each(func(_ int, l []byte, _ bool) error { lines = append(lines, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if f.partial || strings.Join(lines, "|") != "a|bc|d" {
		t.Fatalf("after the line was finished: partial %v, lines %q", f.partial, lines)
	}
}

// TestReportCountsWhatItVerifiedInOnePass: report verifies a series and
// counts its records in one walk of each file: a second walk would count
// bytes that were never verified (found by review: a file rewritten
// between the two walks, a genuine record replayed, was counted as
// verified). The file is read through once; the other looks at it read
// only to its first record.
func TestReportCountsWhatItVerifiedInOnePass(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	key := []byte(strings.Repeat("k", 64))
	l, err := Open(Config{Path: path, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := l.Write(context.Background(), Record{Kind: KindCall, RequestID: strconv.Itoa(i), Principal: `"alice"`, Transport: "http", Method: "tools/call", Tool: `"describe_namespace"`}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	walks := 0
	walked = func(p string) {
		if p == path {
			walks++
		}
	}
	t.Cleanup(func() { walked = nil })
	s, err := Report([]string{path}, Filter{}, ReportOptions{VerifyOptions: VerifyOptions{Keys: NewKeyring([][]byte{key}, nil)}})
	if err != nil || !s.Verified {
		t.Fatalf("report: %v %+v", err, s)
	}
	if walks != 1 {
		t.Fatalf("report read the file through %d times, want once, verifying and counting", walks)
	}
}

// TestACheckedWalkGivesWhatEachGivesInOrder: lines checked ahead on other
// goroutines reach the walk in the file's order, each with what parsing
// and hashing it alone gives, across batches, to the last line or to
// where the walk stops.
func TestACheckedWalkGivesWhatEachGivesInOrder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := writeLog(t, path, Config{}, 1500)
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("not a record\n{\"cut\":")
	fh.Close()
	ring := NewKeyring([][]byte{testKey}, nil)
	newParser := func() *lineParser { return newLineParser(ring) }
	for _, stopAt := range []int{-1, 0, 1023, 1024, 2000} {
		f := &logFile{path: path}
		var want [][]byte
		f.each(func(i int, l []byte, _ bool) error { want = append(want, bytes.Clone(l)); return nil })
		got := 0
		err := f.eachChecked(newParser, func(i int, l []byte, c *checkedLine, last bool) error {
			e, perr := newParser().parse(l)
			if i != got || !bytes.Equal(l, want[i]) || c.hash != lineHash(l) || !reflect.DeepEqual(c.e, e) || (c.err == nil) != (perr == nil) || c.err != nil && c.err.Error() != perr.Error() || last != (i == len(want)-1) {
				t.Fatalf("line %d (want %d): %q last %v, checked %+v", i, got, l, last, c)
			}
			got++
			if i == stopAt {
				return errStop
			}
			return nil
		})
		wantN := len(want)
		if stopAt >= 0 {
			wantN = stopAt + 1
		} else if !f.partial {
			t.Fatal("the walk did not find the last line cut short")
		}
		if err != nil || got != wantN {
			t.Fatalf("stopping at %d: %d lines walked, want %d, %v", stopAt, got, wantN, err)
		}
	}
	if len(lines) < 3000 {
		t.Fatalf("%d lines written", len(lines))
	}
}
