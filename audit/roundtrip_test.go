package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/transparency-dev/formats/proof"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/review"
	"github.com/porthole-dev/porthole/audit/witness"
)

// files are the trail's log files in chain order, oldest first.
func trailFiles(t *testing.T, tr audittest.Trail) []string {
	t.Helper()
	paths, _ := filepath.Glob(tr.Log + "*")
	paths = slices.DeleteFunc(paths, audit.BesideTheLog)
	v, err := review.Verify(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v.Files
}

func verifyTrail(t *testing.T, files []string, opts review.VerifyOptions) *review.Verification {
	t.Helper()
	v, err := review.VerifyWith(files, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantProblem(t *testing.T, v *review.Verification, what string) {
	t.Helper()
	if v.OK() {
		t.Fatalf("verified, want a problem mentioning %q: %+v", what, v)
	}
	if !strings.Contains(v.Problem.What, what) {
		t.Fatalf("problem %q, want one mentioning %q", v.Problem, what)
	}
}

// origins are the two kinds of trail every verification test of this file
// holds to the same: a hash chain alone, and a hash chain kept as a
// Merkle tree under an origin.
var origins = []string{"", "porthole.example.com/audit/porthole-0"}

// eachOrigin runs test on a trail of each kind.
func eachOrigin(t *testing.T, test func(t *testing.T, tr audittest.Trail)) {
	for _, origin := range origins {
		t.Run("origin="+origin, func(t *testing.T) {
			t.Parallel()
			tr := audittest.NewTrail(t)
			tr.Origin = origin
			test(t, tr)
		})
	}
}

// treeChecked fails t unless a tree trail's verification recomputed
// every tree note it met.
func treeChecked(t *testing.T, tr audittest.Trail, v *review.Verification) {
	t.Helper()
	if tr.Origin != "" && (v.Origin != tr.Origin || v.TreeCheckpoints == 0 || v.TreeUnchecked != 0) {
		t.Fatalf("the tree of origin %s: %+v", tr.Origin, v)
	}
}

func TestAWitnessedTrailVerifiesWithThePublicKeyAndIsProvenToItsClose(t *testing.T) {
	t.Parallel()
	eachOrigin(t, witnessedTrailVerifies)
}

func witnessedTrailVerifies(t *testing.T, tr audittest.Trail) {
	s := audittest.NewSigner(t)
	tr.Run(t, audittest.Key, s, 20, 7)
	tr.Run(t, audittest.Key, s, 5, 7) // a restart
	cps := tr.Checkpoints(t)
	v := verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: cps})
	if !v.OK() || !v.Signed || v.Checkpoints != len(cps) || v.ProvenTo != cps[len(cps)-1].Seq {
		t.Fatalf("Verify = %+v", v)
	}
	treeChecked(t, tr, v)
	// The last checkpoint witnesses the close record: nothing after it
	// is left unproven but the checkpoint record itself (and an anchor,
	// when writing it rotated the file).
	if notes := strings.Join(v.Notes, "\n"); strings.Contains(notes, "cannot be proven") || strings.Contains(notes, "without a close") {
		t.Fatalf("notes: %s", notes)
	}
	// Without the HMAC key, the public key and the witness still prove
	// that nothing up to the checkpoint is missing or changed.
	v = verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring(nil, s), Checkpoints: cps})
	if !v.OK() || v.Keyed || v.ProvenTo == 0 {
		t.Fatalf("Verify with the public key alone = %+v", v)
	}
}

// The review's tamper cases (#18), each of which today's main verified or
// only noted.
func TestTamperingWithAWitnessedTrailIsFound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, tr audittest.Trail, files []string) []string
		what   string
		// treeWhat, when set, is what a tree trail's problem mentions:
		// its tree breaks before its chain does.
		treeWhat string
	}{
		{"the head cut (tail -n +11)", func(t *testing.T, tr audittest.Trail, files []string) []string {
			b, _ := os.ReadFile(files[0])
			lines := bytes.SplitAfter(b, []byte("\n"))
			os.WriteFile(files[0], bytes.Join(lines[3:], nil), 0o600)
			return files
		}, "not at its genesis", ""},
		{"the first rotated file deleted", func(t *testing.T, tr audittest.Trail, files []string) []string {
			return files[1:]
		}, "not at its genesis", ""},
		{"a record deleted", func(t *testing.T, tr audittest.Trail, files []string) []string {
			b, _ := os.ReadFile(files[1])
			lines := bytes.SplitAfter(b, []byte("\n"))
			os.WriteFile(files[1], bytes.Join(append(lines[:2:2], lines[3:]...), nil), 0o600)
			return files
		}, "missing: they were deleted", ""},
		{"two records swapped", func(t *testing.T, tr audittest.Trail, files []string) []string {
			b, _ := os.ReadFile(files[1])
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines[1], lines[2] = lines[2], lines[1]
			os.WriteFile(files[1], bytes.Join(lines, nil), 0o600)
			return files
		}, "are missing", ""},
		{"the newest file deleted", func(t *testing.T, tr audittest.Trail, files []string) []string {
			return files[:len(files)-1]
		}, "are missing: the checkpoint", ""},
		{"the tail cut", func(t *testing.T, tr audittest.Trail, files []string) []string {
			last := files[len(files)-1]
			b, _ := os.ReadFile(last)
			lines := bytes.SplitAfter(b, []byte("\n"))
			os.WriteFile(last, bytes.Join(lines[:len(lines)-4], nil), 0o600)
			return files
		}, "are missing: the checkpoint", ""},
		{"a record edited and the chain rewritten by someone holding the HMAC key", func(t *testing.T, tr audittest.Trail, files []string) []string {
			audit.RewriteChain(t, files, func(line []byte) []byte { return bytes.Replace(line, []byte(`alice`), []byte(`mallory`), 1) })
			return files
		}, "is not the one the checkpoint", "tree edge (7 records) is not the tree of the 7 records before it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eachOrigin(t, func(t *testing.T, tr audittest.Trail) {
				s := audittest.NewSigner(t)
				tr.Run(t, audittest.Key, s, 30, 10)
				files := c.tamper(t, tr, trailFiles(t, tr))
				what := c.what
				if tr.Origin != "" && c.treeWhat != "" {
					what = c.treeWhat
				}
				wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: tr.Checkpoints(t)}), what)
			})
		})
	}
}

func TestForgedAndForeignCheckpointsAreRefused(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 20, 10)
	files, cps := trailFiles(t, tr), tr.Checkpoints(t)
	keys := audittest.Ring([][]byte{audittest.Key}, s)

	forged := append([]audit.Checkpoint{}, cps...)
	forged[0].Hash = strings.Repeat("0", 64)
	wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: keys, Checkpoints: forged}), "forged or edited")

	other := audittest.NewSigner(t)
	stranger := cps[0]
	audit.Sign(&stranger, other.Priv)
	wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: keys, Checkpoints: []audit.Checkpoint{stranger}}), "signed by a key the verifier was not given")

	// Another replica, with the same keys: its checkpoints do not witness
	// this log.
	replica := audittest.NewTrail(t)
	replica.Run(t, audittest.Key, s, 20, 10)
	wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: keys, Checkpoints: replica.Checkpoints(t)}), "chain")
}

func TestATailCutThenARestartNamesTheGapAndReusesNoSequenceNumber(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.MaxBytes = 0
	tr.Run(t, audittest.Key, s, 10, 5)
	cps := tr.Checkpoints(t)
	witnessed := cps[len(cps)-1].Seq
	files := trailFiles(t, tr)
	last := files[len(files)-1]
	b, _ := os.ReadFile(last)
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(last, bytes.Join(lines[:len(lines)-6], nil), 0o600)

	tr.Run(t, audittest.Key, s, 2, 5)
	b, _ = os.ReadFile(tr.Log)
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		e, err := audit.ParseLineKey(line, audittest.Key)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == audit.KindChainStart && e.MissingTo == witnessed {
			if e.Seq != witnessed+1 {
				t.Fatalf("the chain-start naming the gap has seq %d; the witness saw %d", e.Seq, witnessed)
			}
			wantProblem(t, verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: tr.Checkpoints(t)}), "porthole found the log shorter")
			// What came after the gap verifies from a checkpoint after it.
			after := tr.Checkpoints(t)
			v := verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: after, FromCheckpoint: after[len(after)-1].Seq})
			if !v.OK() {
				t.Fatalf("from the checkpoint after the gap: %+v", v)
			}
			return
		}
	}
	t.Fatalf("no chain-start names the missing records:\n%s", b)
}

func TestVerifyingFromANamedCheckpointSkipsWhatWasPrunedBeforeIt(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 30, 10)
	files, cps := trailFiles(t, tr), tr.Checkpoints(t)
	keys := audittest.Ring([][]byte{audittest.Key}, s)
	from := cps[1].Seq
	// The files wholly before the checkpoint are gone.
	var kept []string
	for _, f := range files {
		if lastSeqOf(t, f) >= from {
			kept = append(kept, f)
		}
	}
	if len(kept) == len(files) {
		t.Fatal("the test needs a file wholly before the checkpoint")
	}
	if v := verifyTrail(t, kept, review.VerifyOptions{Keys: keys, Checkpoints: cps, FromCheckpoint: from}); !v.OK() || v.FirstSeq != from {
		t.Fatalf("from checkpoint %d: %+v", from, v)
	}
	// The log's own checkpoint records name it too, with no witness file.
	if v := verifyTrail(t, kept, review.VerifyOptions{Keys: keys, FromCheckpoint: from}); !v.OK() {
		t.Fatalf("from checkpoint %d, by the log's own records: %+v", from, v)
	}
	// Without a public key, nothing proves the checkpoint genuine.
	wantProblem(t, verifyTrail(t, kept, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}), FromCheckpoint: from}), "no checkpoint signed")
}

// TestRotatingBothKeysLeavesNoGap follows docs/audit.md's procedure: a new
// HMAC key and a new signing key are put in place and porthole restarted;
// the verifier holds the old and new keys, and the trail verifies whole.
func TestRotatingBothKeysLeavesNoGap(t *testing.T) {
	t.Parallel()
	oldSigner, newSigner := audittest.NewSigner(t), audittest.NewSigner(t)
	newKey := bytes.Repeat([]byte("n"), 32)
	tr := audittest.NewTrail(t)
	tr.Run(t, audittest.Key, oldSigner, 10, 4)
	tr.Run(t, newKey, newSigner, 10, 4)
	files, cps := trailFiles(t, tr), tr.Checkpoints(t)
	v := verifyTrail(t, files, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key, newKey}, oldSigner, newSigner), Checkpoints: cps})
	if !v.OK() || v.ProvenTo == 0 || strings.Contains(strings.Join(v.Notes, "\n"), "cannot be proven") {
		t.Fatalf("after rotating both keys: %+v", v)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "the key was rotated") {
		t.Fatalf("no note of the rotation: %v", v.Notes)
	}
	wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: audittest.Ring([][]byte{newKey}, oldSigner, newSigner), Checkpoints: cps}), "names an HMAC key the verifier was not given")
	wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key, newKey}, newSigner), Checkpoints: cps}), "signed by a key the verifier was not given")
}

// TestTheReportCountsSummarisedDenials: porthole audit report's totals
// include the denials a summary stands for.
func TestTheReportCountsSummarisedDenials(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Config{Path: path, Key: audittest.Key})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	deny := audit.Record{Kind: audit.KindDenial, ClientAddr: "192.0.2.1", Transport: "http", Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "no token"}
	for range 3 {
		if err := l.Write(t.Context(), deny); err != nil {
			t.Fatal(err)
		}
	}
	summary := audit.Record{Kind: audit.KindDenials, ClientAddr: "192.0.2.1", Transport: "http", Count: 500, First: now, Last: now,
		Groups: []audit.DenialGroup{{Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "no token", Count: 500}}}
	if err := l.Write(t.Context(), summary); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if v, err := review.Verify([]string{path}, audittest.Key); err != nil || !v.OK() {
		t.Fatalf("verify: %v %+v", err, v)
	}
	s, err := review.Report([]string{path}, review.Filter{}, review.ReportOptions{VerifyOptions: review.VerifyOptions{Keys: audit.NewKeyring([][]byte{audittest.Key}, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Denials) != 1 || s.Denials[0].Count != 503 {
		t.Fatalf("the report's denials: %+v, want 503 of one kind", s.Denials)
	}
}

// TestVerifyFindsTheSameWithEitherDecoder: a trail with one line changed,
// in ways the scanner declines and ways it reads, sealed again with the
// key or not, verifies to the same result whether its lines are read by
// the scanner or by json.Unmarshal alone.
func TestVerifyFindsTheSameWithEitherDecoder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := audittest.WriteLog(t, path, audit.Config{}, 3)
	edits := []struct{ from, to string }{
		{`"seq":4`, `"seq":"4"`}, {`"seq":4`, `"Seq":4`}, {`"seq":4`, `"seq":4,"seq":9`}, {`"seq":4`, `"seq":4.0`},
		{`"seq":4`, `"seq": 4`}, {`"kind":"call"`, `"kind":"result"`}, {`"kind":"call"`, `"kind":null`},
		{`"v":3`, `"v":3,"x":1`}, {`"prev":"`, `"prev":"\u0061`}, {`"alice\"`, `"alic\u0065\"`},
		{`"args":[`, `"args":[1,`}, {`"time":"`, `"time":"x`},
	}
	for _, reseal := range []bool{false, true} {
		for _, ed := range edits {
			edited := make([][]byte, len(lines))
			copy(edited, lines)
			line := bytes.Replace(lines[3], []byte(ed.from), []byte(ed.to), 1)
			if reseal {
				i := bytes.LastIndex(line, []byte(audit.MacSuffix))
				line = audit.SealBody(audittest.Key, string(line[:i])+"}")
			}
			edited[3] = line
			audittest.Rewrite(t, path, edited)
			results := map[bool]string{}
			for _, lib := range []bool{false, true} {
				audit.SetLibraryDecode(lib)
				v, err := review.Verify([]string{path}, audittest.Key)
				audit.SetLibraryDecode(false)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(v)
				results[lib] = string(b)
			}
			if results[false] != results[true] {
				t.Errorf("%s -> %s (sealed again: %v):\nscanner %s\nlibrary %s", ed.from, ed.to, reseal, results[false], results[true])
			}
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
	l, err := audit.Open(audit.Config{Path: path, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64_000; i++ {
		if err := l.Write(context.Background(), audit.Record{Kind: audit.KindCall, RequestID: strconv.Itoa(i), Principal: "agent", Transport: "http",
			Method: "tools/call", Tool: "describe_workflow", Args: []audit.Arg{{Name: "workflowId", Value: strings.Repeat("w", 900)}}}); err != nil {
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
	v, err := review.Verify([]string{path}, key)
	close(done)
	if err != nil || !v.OK() {
		t.Fatalf("verify: %v %+v", err, v)
	}
	if p := peak.Load(); p > 32<<20 {
		t.Fatalf("verifying a 64 MB log took %d MB of heap", p>>20)
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
	l, err := audit.Open(audit.Config{Path: path, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := l.Write(context.Background(), audit.Record{Kind: audit.KindCall, RequestID: strconv.Itoa(i), Principal: `"alice"`, Transport: "http", Method: "tools/call", Tool: `"describe_namespace"`}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	walks := 0
	audit.SetWalked(func(p string) {
		if p == path {
			walks++
		}
	})
	t.Cleanup(func() { audit.SetWalked(nil) })
	s, err := review.Report([]string{path}, review.Filter{}, review.ReportOptions{VerifyOptions: review.VerifyOptions{Keys: audit.NewKeyring([][]byte{key}, nil)}})
	if err != nil || !s.Verified {
		t.Fatalf("report: %v %+v", err, s)
	}
	if walks != 1 {
		t.Fatalf("report read the file through %d times, want once, verifying and counting", walks)
	}
}

func TestPortholePrunesRotatedFilesPastMaxAgeAndWhatRemainsVerifies(t *testing.T) {
	t.Parallel()
	eachOrigin(t, prunedTrailVerifies)
}

func prunedTrailVerifies(t *testing.T, tr audittest.Trail) {
	s := audittest.NewSigner(t)
	c := &audittest.Clock{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var pruned []string
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 5, MaxBytes: 2000, Now: c.Now, Origin: tr.Origin,
		MaxAge: 24 * time.Hour, OnPruned: func(files []string, err error) {
			if err != nil {
				t.Error(err)
			}
			pruned = append(pruned, files...)
		}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(n int) {
		for i := 0; i < n; i++ {
			if err := l.Write(context.Background(), audittest.CallRecord("alice", "list_workflows")); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(20) // several files, rotated "today"
	c.Time = c.Time.Add(48 * time.Hour)
	write(20) // rotations now prune the files of two days ago
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(pruned) == 0 {
		t.Fatal("nothing was pruned")
	}
	for _, f := range pruned {
		if _, err := os.Stat(filepath.Join(filepath.Dir(tr.Log), f)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s was reported pruned but is there", f)
		}
	}
	files := trailFiles(t, tr)
	v := verifyTrail(t, files, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: tr.Checkpoints(t)})
	if !v.OK() || v.FirstSeq == 1 || !strings.Contains(strings.Join(v.Notes, "\n"), "were pruned, by a signed pruned record") {
		t.Fatalf("after pruning: %+v", v)
	}
	treeChecked(t, tr, v)
	// Without the public key nothing accounts for the missing head.
	wantProblem(t, verifyTrail(t, files, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key})}), "not at its genesis")
}

func TestAPrunedRecordSignedByAnotherKeyAccountsForNothing(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 30, 10)
	files := trailFiles(t, tr)
	// An attacker holding the HMAC key and a key of their own prunes the
	// head of the series.
	mallory := audittest.NewSigner(t)
	if _, err := review.Prune(files, time.Now().Add(time.Hour), review.VerifyOptions{Keys: audittest.Ring(nil, s)}, audittest.Key, mallory.Priv, time.Now()); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s)}), "not genuine")
}

func TestPruneRemovesArchivedFilesAndRefusesALiveLog(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 30, 10)
	files := trailFiles(t, tr)
	// A file's records are all before the time of the last record of the
	// one after it.
	cut, err := audit.LastTime(files[2])
	if err != nil {
		t.Fatal(err)
	}
	removed, err := review.Prune(files, cut.Add(time.Nanosecond), review.VerifyOptions{}, audittest.Key, s.Priv, time.Now())
	if err != nil || len(removed) != 3 {
		t.Fatalf("Prune removed %v, %v; want the 3 oldest files", removed, err)
	}
	v := verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: tr.Checkpoints(t)})
	if !v.OK() {
		t.Fatalf("after porthole audit prune: %+v", v)
	}

	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := review.Prune(trailFiles(t, tr), time.Now().Add(time.Hour), review.VerifyOptions{}, audittest.Key, s.Priv, time.Now()); !errors.Is(err, audit.ErrPruneLive) {
		t.Fatalf("Prune of a live log: %v", err)
	}
}

// TestPruneRefusesFilesThatLeaveOutTheSeriesEnd: `porthole audit prune
// audit.log.*` left out audit.log, wrote its pruned record into the newest
// rotated file with the sequence number of audit.log's anchor, and broke
// the chain (found by review), live or archived.
func TestPruneRefusesFilesThatLeaveOutTheSeriesEnd(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 30, 10)
	rotated, _, err := audit.RotatedFiles(tr.Log)
	if err != nil || len(rotated) < 3 {
		t.Fatalf("rotated %v, %v", rotated, err)
	}
	if _, err := review.Prune(rotated, time.Now().Add(time.Hour), review.VerifyOptions{Keys: audittest.Ring(nil, s)}, audittest.Key, s.Priv, time.Now()); !errors.Is(err, audit.ErrPruneNotWhole) {
		t.Fatalf("Prune of audit.log.* alone: %v", err)
	}
	if v := verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: tr.Checkpoints(t)}); !v.OK() {
		t.Fatalf("the refused prune broke the series: %+v", v)
	}
}

// TestAChainStartCannotJumpOverTheLatestCheckpoint: records 13 to the
// latest checkpoint deleted, and a chain-start that skips to after it (one
// shaped as version 1 writes them, or a second genesis at a file's start):
// verify called the series proven complete to the checkpoint it skipped.
func TestAChainStartCannotJumpOverTheLatestCheckpoint(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.MaxBytes = 0
	tr.Run(t, audittest.Key, s, 30, 10)
	cps := tr.Checkpoints(t)
	latest, chain := cps[len(cps)-1].Seq, cps[0].Chain
	lines := readLines(t, tr.Log)
	kept := bytes.Join(lines[:12], nil)
	keys := audittest.Ring([][]byte{audittest.Key}, s)

	v1Shaped := audit.SealBody(audittest.Key, fmt.Sprintf(`{"time":"2026-12-01T10:00:00Z","seq":%d,"prev":"%s","kind":"chain-start","reason":"a torn line"}`, latest+1, audit.LineHash(lines[11])))
	os.WriteFile(tr.Log, append(bytes.Clone(kept), v1Shaped...), 0o600)
	wantProblem(t, verifyTrail(t, []string{tr.Log}, review.VerifyOptions{Keys: keys, Checkpoints: cps}), "without a schema version after one with")

	genesis := audit.SealBody(audittest.Key, fmt.Sprintf(`{"time":"2026-12-01T10:00:00Z","seq":%d,"prev":"","v":2,"kid":"%s","kind":"chain-start","reason":"a new audit log","chain":"%s"}`, latest+1, audit.KeyID(audittest.Key), chain))
	os.WriteFile(tr.Log, kept, 0o600)
	second := tr.Log + ".2"
	os.WriteFile(second, genesis, 0o600)
	wantProblem(t, verifyTrail(t, []string{tr.Log, second}, review.VerifyOptions{Keys: keys, Checkpoints: cps}), "second genesis")
}

// TestCheckpointsOfOtherReplicasAreSetAside: a reviewer collects every
// replica's checkpoint lines from one cluster's operations log.
func TestCheckpointsOfOtherReplicasAreSetAside(t *testing.T) {
	t.Parallel()
	s := audittest.NewSigner(t)
	a, b := audittest.NewTrail(t), audittest.NewTrail(t)
	a.Run(t, audittest.Key, s, 30, 10)
	b.Run(t, audittest.Key, s, 33, 10)
	all := append(a.Checkpoints(t), b.Checkpoints(t)...)
	v := verifyTrail(t, trailFiles(t, a), review.VerifyOptions{Keys: audittest.Ring(nil, s), Checkpoints: all})
	if !v.OK() || v.ProvenTo == 0 || !strings.Contains(strings.Join(v.Notes, "\n"), "set aside") {
		t.Fatalf("replica A against the cluster's checkpoints: %+v", v)
	}
}

// TestATornWitnessLineDoesNotStopARestart: a witness write cut short, then
// two restarts: the torn line, ended by the first, made the second refuse
// to start, and verify refuse the witness.
func TestATornWitnessLineDoesNotStopARestart(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 5, 4)
	f, _ := os.OpenFile(tr.Witness, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(`{"chain":"abc","seq":1`))
	f.Close()
	tr.Run(t, audittest.Key, s, 5, 4)
	tr.Run(t, audittest.Key, s, 5, 4)
	cps, skipped, err := audit.ReadCheckpoints(tr.Witness)
	if err != nil || len(skipped) != 1 {
		t.Fatalf("ReadCheckpoints: %d read, skipped %v, %v", len(cps), skipped, err)
	}
	if v := verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: cps}); !v.OK() || v.ProvenTo == 0 {
		t.Fatalf("verify: %+v", v)
	}
}

// TestALostCurrentFileContinuesAfterTheNewestRotatedFile: a crash after a
// rotation, then the current file lost: the restart began at the witness's
// seq and claimed records missing that the rotated files hold, and reused
// their sequence numbers.
func TestALostCurrentFileContinuesAfterTheNewestRotatedFile(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Run(t, audittest.Key, s, 2, 1000)
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: tr.Witness, MaxBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		l.Write(context.Background(), audittest.CallRecord("alice", "list_workflows"))
	}
	files := trailFiles(t, tr)
	rotatedLast := lastSeqOf(t, files[len(files)-2])
	l.Close()
	os.Remove(tr.Log)
	tr.Run(t, audittest.Key, s, 1, 1000)
	e := firstRecordAfter(t, tr.Log, 0)
	if e.Seq <= rotatedLast || e.MissingTo != 0 && e.MissingFrom <= rotatedLast {
		t.Fatalf("rotated files hold up to seq %d; the new file begins at seq %d, missing %d..%d", rotatedLast, e.Seq, e.MissingFrom, e.MissingTo)
	}
}

// TestALastRecordLongerThanTheTailIsReadWhole: a record longer than the
// 64 KiB the restart reads made it start a chain at the witness's seq and
// name records missing that were there. ArgsFromJSON's budget keeps a
// call's record far shorter now; this one is built with arguments of
// control characters directly, as any record the writer accepts.
func TestALastRecordLongerThanTheTailIsReadWhole(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.MaxBytes = 0
	tr.Run(t, audittest.Key, s, 3, 1000)
	v := strings.Repeat("\x01", 4000)
	args := audit.CallArgs{Args: []audit.Arg{{Name: "a", Value: v}, {Name: "b", Value: v}, {Name: "c", Value: v}, {Name: "d", Value: v}}}
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: tr.Witness})
	if err != nil {
		t.Fatal(err)
	}
	rec := audittest.CallRecord("alice", "list_workflows")
	rec.Args = args.Args
	if err := l.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, tr.Log)
	if len(lines[len(lines)-1]) < 64<<10 {
		t.Fatalf("the record is %d bytes", len(lines[len(lines)-1]))
	}
	l.Close()
	tr.Run(t, audittest.Key, s, 1, 1000)
	if v := verifyTrail(t, []string{tr.Log}, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: tr.Checkpoints(t)}); !v.OK() {
		t.Fatalf("after a restart behind a long record: %+v", v)
	}
}

// TestVerifyingFromACheckpointPastAnAcknowledgedTornLine: a torn line
// before the checkpoint named, acknowledged by a restart, was held and
// reported as an edit.
func TestVerifyingFromACheckpointPastAnAcknowledgedTornLine(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.MaxBytes = 0
	tr.Run(t, audittest.Key, s, 3, 4)
	f, _ := os.OpenFile(tr.Log, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(`{"time":"2026-12-01T10:00:00Z","seq":`))
	f.Close()
	tr.Run(t, audittest.Key, s, 6, 4)
	cps := tr.Checkpoints(t)
	from := cps[len(cps)-2].Seq
	if v := verifyTrail(t, []string{tr.Log}, review.VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, s), Checkpoints: cps, FromCheckpoint: from}); !v.OK() {
		t.Fatalf("--from-checkpoint %d: %+v", from, v)
	}
}

// TestAWitnessFileServesOneWriter: two replicas given one witness file.
func TestAWitnessFileServesOneWriter(t *testing.T) {
	t.Parallel()
	s := audittest.NewSigner(t)
	a, b := audittest.NewTrail(t), audittest.NewTrail(t)
	la, err := audit.Open(audit.Config{Path: a.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: a.Witness})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	if _, err := audit.Open(audit.Config{Path: b.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: a.Witness}); err == nil || !strings.Contains(err.Error(), "locking the audit checkpoint file") {
		t.Fatalf("a second writer of one witness: %v", err)
	}
}

// TestACutFoundAfterTheSigningKeyWasRotatedIsNamed: the restart after a
// rotation of the signing key read only checkpoints its new key verified,
// and so reused the sequence numbers of the cut records.
func TestACutFoundAfterTheSigningKeyWasRotatedIsNamed(t *testing.T) {
	t.Parallel()
	old, nu := audittest.NewSigner(t), audittest.NewSigner(t)
	tr := audittest.NewTrail(t)
	tr.MaxBytes = 0
	tr.Run(t, audittest.Key, old, 10, 5)
	cps := tr.Checkpoints(t)
	lines := readLines(t, tr.Log)
	os.WriteFile(tr.Log, bytes.Join(lines[:len(lines)-8], nil), 0o600)
	tr.Run(t, audittest.Key, nu, 3, 5)
	e := firstRecordAfter(t, tr.Log, len(lines)-8)
	if e.Kind != audit.KindChainStart || e.MissingTo != cps[len(cps)-1].Seq || e.Seq != e.MissingTo+1 {
		t.Fatalf("after the restart: seq %d %s missing %d..%d (witnessed %d)", e.Seq, e.Kind, e.MissingFrom, e.MissingTo, cps[len(cps)-1].Seq)
	}
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func firstRecordAfter(t *testing.T, path string, n int) audit.Entry {
	t.Helper()
	lines := readLines(t, path)
	e, err := audit.ParseLineKey(bytes.TrimSuffix(lines[n], []byte("\n")), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTriesOfAFailingSinkLeaveNoBlankLines: while a sink refuses records
// but takes a single byte (a non-blocking pipe whose reader is slow), each
// try of the sink wrote a newline to end a line no write had torn; a
// series of them is a series of lines that are not records, which verify
// refuses. A newline now ends only a line a write tore, once, and the log
// verifies.
func TestTriesOfAFailingSinkLeaveNoBlankLines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		tear int
	}{
		{"a write that fails writes nothing", 0},
		{"a write that fails tears its line", 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := audit.NewMemSink(1, c.tear)
			l := audit.OpenMem(t, s, audit.Config{SyncInterval: 5 * time.Millisecond})
			for _, rec := range []audit.Record{{Kind: audit.KindChainStart, Reason: "a new audit log"}, audittest.CallRecord("alice", "x")} {
				if err := l.Write(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
			}
			s.Fail(syscall.EAGAIN)
			if err := l.Write(context.Background(), audittest.CallRecord("alice", "x")); err == nil {
				t.Fatal("a write to a failing sink succeeded")
			}
			s.SetTear(0)                      // the tries tear nothing more
			time.Sleep(50 * time.Millisecond) // about ten tries
			s.Fail(nil)
			audittest.Eventually(t, "the problem ends once the sink heals", func() bool { return l.Problem() == "" })
			if err := l.Write(context.Background(), audittest.CallRecord("alice", "y")); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, s.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			v, err := review.Verify([]string{path}, audittest.Key)
			if err != nil || !v.OK() {
				t.Fatalf("Verify = %+v, %v; the log:\n%s", v, err, strings.Join(s.Lines(), "\n"))
			}
		})
	}
}

// TestATreeTrailsNotesAndTreeFileAreHeldToItsRecords: verify recomputes
// each signed tree note, in the log and in the checkpoint file, from the
// records, and holds the tree file `audit prove` proves from to each note
// by its root and a consistency proof from the note before; a tree file
// changed in one hash, a note signed by another key and a note of another
// origin are each a problem.
func TestATreeTrailsNotesAndTreeFileAreHeldToItsRecords(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	tr.Origin = origins[1]
	tr.Run(t, audittest.Key, s, 30, 10)
	tr.Run(t, audittest.Key, s, 10, 10)
	keys := audittest.Ring([][]byte{audittest.Key}, s)
	withTree := func() review.VerifyOptions {
		tree, err := merkle.ReadTree(tr.Log + audit.TreeSuffix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tree.Close() })
		return review.VerifyOptions{Keys: keys, Checkpoints: tr.Checkpoints(t), TreeFile: tree}
	}
	v := verifyTrail(t, trailFiles(t, tr), withTree())
	treeChecked(t, tr, v)
	if !v.OK() || v.TreeCheckpoints < 5 {
		t.Fatalf("with the tree file: %+v", v)
	}

	// The hash of the largest subtree of the first note's tree, which its
	// root is made from.
	first, err := keys.OpenNote(tr.Checkpoints(t)[0].Note)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(tr.Log+audit.TreeSuffix, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 32*tlog.StoredHashIndex(bits.Len64(uint64(first.Size))-1, 0))
	f.Close()
	wantProblem(t, verifyTrail(t, trailFiles(t, tr), withTree()), "the tree file does not hold the signed tree")

	for name, signer := range map[string]note.Signer{
		"another key":    merkle.NewSigner(tr.Origin, audittest.NewSigner(t).Priv),
		"another origin": merkle.NewSigner("elsewhere.example/log", s.Priv),
	} {
		cps := tr.Checkpoints(t)
		c, err := merkle.ParseText(strings.SplitN(cps[2].Note, "\n\n", 2)[0] + "\n")
		if err != nil {
			t.Fatal(err)
		}
		c.Origin = signer.Name()
		b, err := merkle.SignCheckpoint(c, signer)
		if err != nil {
			t.Fatal(err)
		}
		cps[2].Note = string(b)
		v := verifyTrail(t, trailFiles(t, tr), review.VerifyOptions{Keys: keys, Checkpoints: cps})
		if v.OK() || !strings.Contains(v.Problem.What, "tree note") {
			t.Fatalf("a note signed with %s: %+v", name, v.Problem)
		}
	}
}

// TestARecordsProofIsCheckedWithThePublicKeyAlone: `audit prove`'s proof
// of one record of a tree trail is a C2SP tlog-proof that
// transparency-dev/formats reads, carrying the record's line, and it
// checks with the public key alone; an edited record, another key, and a
// tree file of another trail are each refused.
func TestARecordsProofIsCheckedWithThePublicKeyAlone(t *testing.T) {
	t.Parallel()
	s, tr, other := audittest.NewSigner(t), audittest.NewTrail(t), audittest.NewTrail(t)
	tr.Origin, other.Origin = origins[1], origins[1]
	tr.Run(t, audittest.Key, s, 30, 10)
	other.Run(t, audittest.Key, s, 30, 10)
	tree, err := merkle.ReadTree(tr.Log + audit.TreeSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	p, err := review.Prove(trailFiles(t, tr), tree, review.Pick{Seq: 17})
	if err != nil {
		t.Fatal(err)
	}
	var theirs proof.TLogProof
	if err := theirs.Unmarshal(p.Marshal()); err != nil || theirs.Index != 16 || !bytes.Equal(theirs.ExtraData, p.Line) || string(theirs.Checkpoint) != p.Note {
		t.Fatalf("formats read %+v, %v", theirs, err)
	}
	read, err := review.ParseRecordProof(p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	cp, e, err := read.Check(audittest.Ring(nil, s))
	if err != nil || e.Seq != 17 || cp.Origin != tr.Origin {
		t.Fatalf("Check = %+v, %+v, %v", cp, e, err)
	}

	edited := *read
	edited.Line = bytes.Replace(read.Line, []byte("alice"), []byte("mallory"), 1)
	if _, _, err := edited.Check(audittest.Ring(nil, s)); err == nil {
		t.Fatal("an edited record checked")
	}
	if _, _, err := read.Check(audittest.Ring(nil, audittest.NewSigner(t))); err == nil {
		t.Fatal("a proof checked with another key")
	}
	otherTree, err := merkle.ReadTree(other.Log + audit.TreeSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer otherTree.Close()
	if _, err := review.Prove(trailFiles(t, tr), otherTree, review.Pick{Seq: 17}); err == nil || !strings.Contains(err.Error(), "is not the record") {
		t.Fatalf("a proof from another trail's tree file: %v", err)
	}
}

// witnessPair starts two witnesses of the log of origin signed by s, and
// returns them as a log's Config takes them and as verify does.
func witnessPair(t *testing.T, s audittest.Signer, origin string, names ...string) ([]witness.Witness, []*witness.Verifier, []string) {
	t.Helper()
	vkey, err := merkle.VerifierKey(origin, s.Pub)
	if err != nil {
		t.Fatal(err)
	}
	var ws []witness.Witness
	var vs []*witness.Verifier
	var urls []string
	for _, name := range names {
		skey, wkey, err := witness.GenerateKey(name)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := witness.NewCosigner(skey, nil)
		srv, err := witness.NewServer(c, []string{vkey}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		v, _ := witness.NewVerifier(wkey)
		ws, vs, urls = append(ws, witness.Witness{URL: hs.URL, Verifier: v}), append(vs, v), append(urls, hs.URL)
	}
	return ws, vs, urls
}

// runWitnessed writes n call and result pairs to a tree trail sent to ws,
// and closes it once every witness has cosigned its latest checkpoint.
func runWitnessed(t *testing.T, tr audittest.Trail, s audittest.Signer, ws []witness.Witness, n int) {
	t.Helper()
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 7, MaxBytes: tr.MaxBytes, Origin: tr.Origin, Witnesses: ws, WitnessQuorum: len(ws)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := l.Write(context.Background(), audittest.CallRecord("alice", "list_workflows")); err != nil {
			t.Fatal(err)
		}
	}
	audittest.Eventually(t, "every witness cosigns the latest checkpoint", func() bool {
		for _, st := range l.Witnesses() {
			if st.Size == 0 || st.Behind != 0 {
				return false
			}
		}
		return true
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// latestCosigned asks each witness for the latest checkpoint it cosigned.
func latestCosigned(t *testing.T, urls []string, origin string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, u := range urls {
		resp, err := http.Get(u + "/checkpoint?origin=" + origin)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the witness at %s: %d %s", u, resp.StatusCode, b)
		}
		out = append(out, b)
	}
	return out
}

// TestWitnessesProveASeriesAgainstEveryKeyInThePod: with the witnesses'
// cosigned checkpoints, verify proves a tree trail to the largest tree a
// quorum cosigned, and says when they cosigned it. A trail written again
// from the start by someone holding every key in the pod, a trail cut
// with its cosignatures deleted (the witnesses asked for their latest),
// and a fork shown to one witness while the other saw the trail are each
// reported, though each verifies with porthole's keys alone.
func TestWitnessesProveASeriesAgainstEveryKeyInThePod(t *testing.T) {
	t.Parallel()
	origin := origins[1]
	s := audittest.NewSigner(t)
	ws, vs, urls := witnessPair(t, s, origin, "w.example/1", "w.example/2")
	tr := audittest.NewTrail(t)
	tr.Origin = origin
	runWitnessed(t, tr, s, ws, 30)
	keys := audittest.Ring([][]byte{audittest.Key}, s)
	cosigned := func() [][]byte {
		var out [][]byte
		for _, line := range bytes.Split(bytes.TrimSpace(readAll(t, tr.Log+audit.CosignaturesSuffix)), []byte("\n")) {
			var c witness.Cosigned
			if err := json.Unmarshal(line, &c); err != nil {
				t.Fatal(err)
			}
			out = append(out, []byte(c.Checkpoint))
		}
		return out
	}
	opts := func(cps [][]byte) review.VerifyOptions {
		return review.VerifyOptions{Keys: keys, Origin: origin, Witnessing: &review.Witnessing{Keys: vs, Quorum: 2, Cosigned: cps}}
	}
	v := verifyTrail(t, trailFiles(t, tr), opts(cosigned()))
	if !v.OK() || v.WitnessedTo < 30 || v.WitnessedBy != 2 || v.WitnessedAt.IsZero() || !strings.Contains(strings.Join(v.Basis(), "\n"), "witnessed: seq 1 to") {
		t.Fatalf("a witnessed trail: %+v", v)
	}

	// One more checkpoint, cosigned by the first witness alone: the
	// quorum of two proves the series to the second's tree, and the
	// first's, larger, still shows a cut.
	runWitnessed(t, tr, s, ws[:1], 6)
	v = verifyTrail(t, trailFiles(t, tr), opts(latestCosigned(t, urls, origin)))
	if !v.OK() || v.WitnessedTo == 0 || v.WitnessedTo >= v.TreeSize {
		t.Fatalf("witnesses at two sizes: %+v", v)
	}
	files := trailFiles(t, tr)
	wantProblem(t, verifyTrail(t, files[:len(files)-3], opts(latestCosigned(t, urls, origin))), "the end of the trail was cut")

	// Every key in the pod: the HMAC key, the signing key and the origin.
	rewritten := audittest.NewTrail(t)
	rewritten.Origin = origin
	rewritten.Run(t, audittest.Key, s, 15, 7)
	if v := verifyTrail(t, trailFiles(t, rewritten), review.VerifyOptions{Keys: keys, Origin: origin, Checkpoints: rewritten.Checkpoints(t)}); !v.OK() {
		t.Fatalf("the rewritten trail does not verify with porthole's keys: %+v", v.Problem)
	}
	wantProblem(t, verifyTrail(t, trailFiles(t, rewritten), opts(cosigned())), "rewritten after that witness saw them")

	// The tail cut and the cosignatures file gone: the witnesses hold
	// what they cosigned last.
	os.Remove(tr.Log + audit.CosignaturesSuffix)
	wantProblem(t, verifyTrail(t, files[:len(files)-2], opts(latestCosigned(t, urls, origin))), "the end of the trail was cut")

	// A fork, written with every key, shown to a witness that never saw
	// the trail; the first witness saw the trail.
	fws, fvs, furls := witnessPair(t, s, origin, "w.example/3")
	fork := audittest.NewTrail(t)
	fork.Origin = origin
	runWitnessed(t, fork, s, fws, 30)
	both := review.VerifyOptions{Keys: keys, Origin: origin, Witnessing: &review.Witnessing{Keys: []*witness.Verifier{vs[0], fvs[0]}, Quorum: 1,
		Cosigned: append(latestCosigned(t, urls[:1], origin), latestCosigned(t, furls, origin)...)}}
	wantProblem(t, verifyTrail(t, trailFiles(t, tr), both), "fork")
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
