package audit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
	ring := NewKeyring([][]byte{testKey}, nil)
	f := &logFile{path: path}
	var heap uint64
	err := f.eachChecked(func() *lineParser { return newLineParser(ring) }, func(_ int, _ []byte, _ *checkedLine, last bool) error {
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
