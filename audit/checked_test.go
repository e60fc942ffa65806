package audit_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

// writeShrinkingBatches writes a file of batches that each take one
// batch buffer and are each shorter, in lines, than the one before: j
// short records and then one of a reason of big bytes, for j from n-1
// down to 0. Their HMACs are wrong, so a keyed walk breaks at the first
// line and report reads on, counting.
func writeShrinkingBatches(t *testing.T, n, big int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(fh)
	mac := strings.Repeat("0", 64)
	reason := strings.Repeat("r", big)
	for j := n - 1; j >= 0; j-- {
		for k := range j {
			fmt.Fprintf(w, `{"seq":%d,"mac":"%s"}`+"\n", k, mac)
		}
		fmt.Fprintf(w, `{"seq":%d,"reason":"%s","mac":"%s"}`+"\n", j, reason, mac)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAReusedBatchKeepsNoLineOfItsLastUse: a batch given back to be
// filled again keeps none of the records it held. Its checked lines were
// cut to length 0 and not cleared, so a hostile file of batches each
// shorter than the last left one big decoded record behind per batch, and
// a walk that reads on past a break (report, verify without a key) held
// the whole file in memory.
func TestAReusedBatchKeepsNoLineOfItsLastUse(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MB")
	}
	const batches, big = 128, 512 << 10
	path := writeShrinkingBatches(t, batches, big)
	ring := audit.NewKeyring([][]byte{audittest.Key}, nil)
	f := &audit.LogFile{Path: path}
	var heap uint64
	err := f.EachChecked(func() *audit.LineParser { return audit.NewLineParser(ring) }, func(_ int, _ []byte, _ *audit.CheckedLine, last bool) error {
		if last {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			heap = m.HeapInuse
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What is live at the last line is the batches in flight and each's
	// two line buffers, a few big lines in all; the file is 64 MB.
	if heap > 16<<20 {
		t.Fatalf("%d MB of heap at the end of a walk of a %d MB file: walked batches keep their records", heap>>20, batches*big>>20)
	}
}

// TestACheckedWalkLeavesNoGoroutineBehind: however a walk ends (to the
// end, stopped, failed, panicking, or a file that cannot be read), its
// reader and workers are gone when eachChecked returns. A panic in fn
// left them blocked for good when the cleanup ran only on return.
func TestACheckedWalkLeavesNoGoroutineBehind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	audittest.WriteLog(t, path, audit.Config{}, 3000)
	ring := audit.NewKeyring([][]byte{audittest.Key}, nil)
	newParser := func() *audit.LineParser { return audit.NewLineParser(ring) }
	boom := errors.New("boom")
	walkTo := func(n int, err error) func(int, []byte, *audit.CheckedLine, bool) error {
		return func(i int, _ []byte, _ *audit.CheckedLine, _ bool) error {
			if i == n {
				return err
			}
			return nil
		}
	}
	cases := []struct {
		name    string
		path    string
		fn      func(int, []byte, *audit.CheckedLine, bool) error
		wantErr bool
	}{
		{"a walk to the end", path, walkTo(-1, nil), false},
		{"a walk stopped at the first line", path, walkTo(0, audit.ErrStopWalk), false},
		{"a walk failing at the first line", path, walkTo(0, boom), true},
		{"a walk failing mid-file", path, walkTo(2500, boom), true},
		{"a walk panicking mid-file", path, func(i int, _ []byte, _ *audit.CheckedLine, _ bool) error {
			if i == 1500 {
				panic(boom)
			}
			return nil
		}, true},
		{"a directory", dir, walkTo(-1, nil), true},
		{"a missing file", path + ".x", walkTo(-1, nil), true},
	}
	base := runtime.NumGoroutine()
	for _, c := range cases {
		for range 3 {
			err := walkRecovering(&audit.LogFile{Path: c.path}, newParser, c.fn)
			if (err != nil) != c.wantErr {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			t.Fatalf("%s: %d goroutines after, %d before", c.name, n, base)
		}
	}
}

// walkRecovering is f.eachChecked, with a panic of fn recovered as an
// error.
func walkRecovering(f *audit.LogFile, newParser func() *audit.LineParser, fn func(int, []byte, *audit.CheckedLine, bool) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return f.EachChecked(newParser, fn)
}
