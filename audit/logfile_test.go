package audit_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

// TestEachReadsTheLinesSplitWould: a file walked line by line gives the
// lines its contents split at newlines give (the last newline starting no
// line), says which is last, and cuts a line past audit.MaxLineBytes.
func TestEachReadsTheLinesSplitWould(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", audit.MaxLineBytes+10)
	for _, content := range []string{"", "\n", "a", "a\n", "a\n\n", "a\nb", "a\nb\n", "\n\na\n", long + "\nb\n", "a\n" + long} {
		path := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var got []string
		lastAt := -1
		err := (&audit.LogFile{Path: path}).Each(func(i int, line []byte, last bool) error {
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
				split = append(split, l[:min(len(l), audit.MaxLineBytes)])
			}
		}
		if strings.Join(got, "|") != strings.Join(split, "|") || len(got) != len(split) || lastAt != len(split)-1 {
			t.Errorf("%.20q: %d lines, last at %d; want %d", content, len(got), lastAt, len(split))
		}
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
	f, _, err := audit.ReadLogFile(path)
	if err != nil || !f.Partial {
		t.Fatalf("a file ending mid-line: partial %v, %v", f.Partial, err)
	}
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("c\nd\n")
	fh.Close()
	var lines []string
	if err := f.Each(func(_ int, l []byte, _ bool) error { lines = append(lines, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if f.Partial || strings.Join(lines, "|") != "a|bc|d" {
		t.Fatalf("after the line was finished: partial %v, lines %q", f.Partial, lines)
	}
}

// TestACheckedWalkGivesWhatEachGivesInOrder: lines checked ahead on other
// goroutines reach the walk in the file's order, each with what parsing
// and hashing it alone gives, across batches, to the last line or to
// where the walk stops.
func TestACheckedWalkGivesWhatEachGivesInOrder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := audittest.WriteLog(t, path, audit.Config{}, 1500)
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("not a record\n{\"cut\":")
	fh.Close()
	ring := audit.NewKeyring([][]byte{audittest.Key}, nil)
	newParser := func() *audit.LineParser { return audit.NewLineParser(ring) }
	for _, stopAt := range []int{-1, 0, 1023, 1024, 2000} {
		f := &audit.LogFile{Path: path}
		var want [][]byte
		f.Each(func(i int, l []byte, _ bool) error { want = append(want, bytes.Clone(l)); return nil })
		got := 0
		err := f.EachChecked(newParser, func(i int, l []byte, c *audit.CheckedLine, last bool) error {
			e, perr := audit.Parse(newParser(), l)
			if i != got || !bytes.Equal(l, want[i]) || c.Hash != audit.LineHash(l) || !reflect.DeepEqual(c.Entry, e) || (c.Err == nil) != (perr == nil) || c.Err != nil && c.Err.Error() != perr.Error() || last != (i == len(want)-1) {
				t.Fatalf("line %d (want %d): %q last %v, checked %+v", i, got, l, last, c)
			}
			got++
			if i == stopAt {
				return audit.ErrStopWalk
			}
			return nil
		})
		wantN := len(want)
		if stopAt >= 0 {
			wantN = stopAt + 1
		} else if !f.Partial {
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
