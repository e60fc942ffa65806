package review

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

func TestVerifyAcceptsAnUntouchedLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	audittest.WriteLog(t, path, audit.Config{}, 5)
	v, err := Verify([]string{path}, audittest.Key)
	if err != nil || !v.OK() {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	if v.Records != 12 || v.FirstSeq != 1 || v.LastSeq != 12 { // chain-start, 10 records, close
		t.Fatalf("records %d seq %d..%d, want 12 records 1..12", v.Records, v.FirstSeq, v.LastSeq)
	}
}

func TestVerifyFindsTheFirstTamperedRecord(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(lines [][]byte) [][]byte
		line   int
		what   string
	}{
		{"one byte edited", func(l [][]byte) [][]byte {
			l[4] = bytes.Replace(l[4], []byte(`"alice\"`), []byte(`"alicf\"`), 1)
			return l
		}, 5, "HMAC does not match"},
		{"a line deleted", func(l [][]byte) [][]byte { return append(l[:3:3], l[4:]...) }, 4, "missing"},
		{"two lines swapped", func(l [][]byte) [][]byte { l[3], l[4] = l[4], l[3]; return l }, 4, "missing"},
		{"a line inserted", func(l [][]byte) [][]byte {
			return append(l[:5:5], append([][]byte{l[2]}, l[5:]...)...)
		}, 6, "reordered or duplicated"},
		{"a forged line inserted", func(l [][]byte) [][]byte {
			forged := bytes.Replace(l[5], []byte(`"kind"`), []byte(`"x":1,"kind"`), 1)
			return append(l[:5:5], append([][]byte{forged}, l[5:]...)...)
		}, 6, "HMAC does not match"},
		{"the tail truncated mid-line", func(l [][]byte) [][]byte {
			last := len(l) - 1
			l[last] = l[last][:len(l[last])/2]
			return l
		}, 12, "truncated"},
		{"garbage in the middle", func(l [][]byte) [][]byte {
			return append(l[:7:7], append([][]byte{[]byte("hello\n")}, l[7:]...)...)
		}, 8, "not an audit record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.log")
			lines := audittest.WriteLog(t, path, audit.Config{}, 5)
			lines = lines[:len(lines)-1] // the empty tail after the last newline
			audittest.Rewrite(t, path, tc.tamper(lines))
			v, err := Verify([]string{path}, audittest.Key)
			if err != nil {
				t.Fatal(err)
			}
			if v.OK() {
				t.Fatalf("Verify passed a log with %s", tc.name)
			}
			if v.Problem.Line != tc.line || !strings.Contains(v.Problem.What, tc.what) {
				t.Fatalf("problem %s, want line %d mentioning %q", v.Problem, tc.line, tc.what)
			}
		})
	}
}

func TestVerifyWithoutTheKeyStillChecksLinksAndSaysSo(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := audittest.WriteLog(t, path, audit.Config{}, 3)
	v, _ := Verify([]string{path}, nil)
	if !v.OK() || v.Keyed || !strings.Contains(strings.Join(v.Notes, " "), "HMACs were not checked") {
		t.Fatalf("unkeyed verify = %+v", v)
	}
	audittest.Rewrite(t, path, append(lines[:2:2], lines[3:]...))
	if v, _ := Verify([]string{path}, nil); v.OK() {
		t.Fatal("an unkeyed verify missed a deleted line")
	}
	if v, _ := Verify([]string{path}, bytes.Repeat([]byte("x"), 32)); v.OK() {
		t.Fatal("verify with the wrong key passed")
	}
}

func TestRestartContinuesTheChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	audittest.WriteLog(t, path, audit.Config{}, 2)
	audittest.WriteLog(t, path, audit.Config{}, 2)
	v, _ := Verify([]string{path}, audittest.Key)
	if !v.OK() || v.LastSeq != 11 { // chain-start, 4, close; then 4, close
		t.Fatalf("after a restart: %+v", v)
	}
	if n := strings.Count(strings.Join(v.Notes, "\n"), "a new chain starts"); n != 1 {
		t.Fatalf("%d chain starts, want only the first: %v", n, v.Notes)
	}
}

func TestRestartWithAnotherKeyStartsANewChainThatSaysSo(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	audittest.WriteLog(t, path, audit.Config{}, 1)
	other := bytes.Repeat([]byte("o"), 32)
	audittest.WriteLog(t, path, audit.Config{Key: other}, 1)
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "the key was rotated") {
		t.Fatalf("no chain-start saying why:\n%s", b)
	}
}

func TestRestartAfterATornWriteIsAcknowledged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	audittest.WriteLog(t, path, audit.Config{}, 2)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	f.WriteString(`{"time":"2026-`) // a crash mid-write
	f.Close()
	audittest.WriteLog(t, path, audit.Config{}, 1)
	v, _ := Verify([]string{path}, audittest.Key)
	if !v.OK() || !strings.Contains(strings.Join(v.Notes, "\n"), "torn write") {
		t.Fatalf("after a torn write and restart: %+v", v)
	}
}

func TestRotationAnchorsEachFileToTheLast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	audittest.WriteLog(t, path, audit.Config{MaxBytes: 2000, Now: clock}, 10)
	files, _ := filepath.Glob(path + "*")
	if len(files) < 4 {
		t.Fatalf("rotation made %d files, want at least 4", len(files))
	}
	// Any order: verify sorts the series itself.
	sort.Sort(sort.Reverse(sort.StringSlice(files)))
	v, err := Verify(files, audittest.Key)
	if err != nil || !v.OK() {
		t.Fatalf("rotated series: %+v, %v", v, err)
	}
	if want := 22 + len(files) - 1; v.Records != want { // chain-start, 20, close, and an anchor per rotation
		t.Fatalf("%d records across the series, want %d", v.Records, want)
	}

	chain := v.Files
	missing := append(append([]string{}, chain[:1]...), chain[2:]...) // drop the second file in chain order
	v, _ = Verify(missing, audittest.Key)
	if v.OK() || !strings.Contains(v.Problem.What, "a file of the series is missing") {
		t.Fatalf("series with a missing middle file: %+v", v.Problem)
	}
}
