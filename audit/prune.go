package audit

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Retention: the oldest files of a rotated series may be removed, whole and
// oldest first, leaving no hole. Before any is removed, a "pruned" record
// is written to the series: an Ed25519-signed statement (a Checkpoint
// signed as pruned, not as a checkpoint) of the sequence number and line
// hash of the last record removed. What remains then verifies from that
// point, for a verifier holding the public key (VerifyWith); without a
// signed pruned record, a series that does not begin at its genesis is a
// problem.

// rotatedAtLayout is the suffix rotate gives a file it renames aside.
const rotatedAtLayout = "20060102T150405.000000000Z"

// rotatedFiles are the files rotated aside from the log at path, in chain
// order (by the sequence number of their first record: a clock stepped
// back names a later file earlier), with the time each was rotated (when
// its last record was written). A file whose first line is no record sorts
// by its name's time.
func rotatedFiles(path string) ([]string, []time.Time, error) {
	matches, err := filepath.Glob(escapeGlob(path) + ".*")
	if err != nil {
		return nil, nil, err
	}
	type rotated struct {
		path  string
		at    time.Time
		first uint64
	}
	var rs []rotated
	for _, m := range matches {
		t, err := time.Parse(rotatedAtLayout, strings.TrimPrefix(m, path+"."))
		if err != nil {
			continue
		}
		rs = append(rs, rotated{m, t, firstSeq(m)})
	}
	slices.SortStableFunc(rs, func(a, b rotated) int {
		if a.first != 0 && b.first != 0 {
			return cmp.Compare(a.first, b.first)
		}
		return a.at.Compare(b.at)
	})
	files, times := make([]string, len(rs)), make([]time.Time, len(rs))
	for i, r := range rs {
		files[i], times[i] = r.path, r.at
	}
	return files, times, nil
}

// firstSeq is the sequence number of a file's first record, or 0.
func firstSeq(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	e, err := ParseLineKey(line, nil)
	if err != nil {
		return 0
	}
	return e.Seq
}

// escapeGlob escapes what filepath.Glob reads as a pattern in a path: a
// log in a directory named trail[1] had no rotated files.
func escapeGlob(path string) string {
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`*?[]\\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lastRecordOf is the sequence number and line hash of the last line of a
// file that has a record's shape.
func lastRecordOf(path string) (seq uint64, hash string, err error) {
	line, err := lastRecordLineOf(path)
	if err != nil {
		return 0, "", err
	}
	e, _ := ParseLineKey(line, nil)
	return e.Seq, LineHash(line), nil
}

// lastRecordLineOf is the last line of a file that has a record's shape,
// read from the file's end (lastRecordLine of its tail), and from its
// start only when the tail holds none.
func lastRecordLineOf(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > 0 {
		lines, partial, err := tailLines(f, fi.Size())
		if err != nil {
			return nil, err
		}
		if line := lastRecordLine(lines, partial); line != nil {
			return line, nil
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if _, err := ParseLineKey(lines[i], nil); err == nil {
			return lines[i], nil
		}
	}
	return nil, fmt.Errorf("%s holds no audit record", path)
}

// pruneStatement signs the statement that the records up to the last of
// path (inclusive) were removed.
func pruneStatement(chain, last string, now time.Time, signer ed25519.PrivateKey) (*Checkpoint, error) {
	seq, hash, err := lastRecordOf(last)
	if err != nil {
		return nil, err
	}
	p := &Checkpoint{Chain: chain, Seq: seq, Hash: hash, Time: now.UTC()}
	p.signAs(LabelPruned, signer)
	return p, nil
}

// pruneOld removes the rotated files whose rotation is older than MaxAge,
// after writing the pruned record that stands for them; called only by the
// loop. A file that cannot be read stops the pruning there (nothing after
// it is removed, so no hole is left).
func (l *Log) pruneOld() error {
	if l.cfg.MaxAge <= 0 || l.cfg.Signer == nil || !l.rotatable {
		return nil
	}
	now := l.cfg.Now()
	files, times, err := rotatedFiles(l.cfg.Path)
	if err != nil {
		return err
	}
	n := 0
	for n < len(files) && now.Sub(times[n]) > l.cfg.MaxAge {
		n++
	}
	if n == 0 {
		return nil
	}
	p, err := pruneStatement(l.chain, files[n-1], now, l.cfg.Signer)
	if err != nil {
		return err
	}
	names := make([]string, n)
	for i, f := range files[:n] {
		names[i] = filepath.Base(f)
	}
	reason := fmt.Sprintf("removed %d rotated file(s) older than %s, records up to seq %d: %s", n, l.cfg.MaxAge, p.Seq, strings.Join(names, ", "))
	if err := l.write(Record{Kind: KindPruned, Pruned: p, Reason: reason}); err != nil {
		return err
	}
	// The record stands before the files go: a crash between the two
	// leaves files a verifier can still read, never a hole.
	for _, f := range files[:n] {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if l.cfg.OnPruned != nil {
		l.cfg.OnPruned(names, nil)
	}
	return nil
}

// prune runs pruneOld and reports a failure to OnPruned.
func (l *Log) prune() {
	if err := l.pruneOld(); err != nil && l.cfg.OnPruned != nil {
		l.cfg.OnPruned(nil, err)
	}
}

// ErrPruneLive is a prune of a series whose newest file porthole is
// writing: porthole prunes a live log itself (PORTHOLE_AUDIT_MAX_AGE).
var ErrPruneLive = errors.New("porthole is writing this log; it prunes a live log itself (PORTHOLE_AUDIT_MAX_AGE)")

// AppendPruned removes, from an archived series that no porthole is
// writing and that verified (files are its files in order, chain its
// chain: review.Prune verifies first), the oldest files whose every
// record is older than before, leaving at least the newest file; it first
// appends a signed pruned record to the newest file, chained and keyed
// with key. It returns the files removed.
func AppendPruned(files []string, chain string, before time.Time, key []byte, signer ed25519.PrivateKey, now time.Time) ([]string, error) {
	newest := files[len(files)-1]
	if err := noSuccessor(files); err != nil {
		return nil, err
	}
	f, err := openLocked(newest, os.O_WRONLY|os.O_APPEND)
	if errors.Is(err, ErrLogInUse) {
		return nil, ErrPruneLive
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := 0
	for n < len(files)-1 {
		last, err := lastTime(files[n])
		if err != nil || !last.Before(before) {
			break
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	p, err := pruneStatement(chain, files[n-1], now, signer)
	if err != nil {
		return nil, err
	}
	seq, prev, err := lastRecordOf(newest)
	if err != nil {
		return nil, err
	}
	l := newLog(Config{Key: key, Now: func() time.Time { return now }}, f, false, seq, prev)
	l.chain = chain
	names := make([]string, n)
	for i, p := range files[:n] {
		names[i] = filepath.Base(p)
	}
	reason := fmt.Sprintf("porthole audit prune removed %d archived file(s) with every record before %s, records up to seq %d: %s", n, before.UTC().Format(time.RFC3339), p.Seq, strings.Join(names, ", "))
	if err := l.write(Record{Kind: KindPruned, Pruned: p, Reason: reason}); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	for _, p := range files[:n] {
		if err := os.Remove(p); err != nil {
			return nil, err
		}
	}
	return files[:n], nil
}

// lastTime is the time of the last record of a file.
func lastTime(path string) (time.Time, error) {
	line, err := lastRecordLineOf(path)
	if err != nil {
		return time.Time{}, err
	}
	e, _ := ParseLineKey(line, nil)
	return e.Time, nil
}

// RotatedFrom is the path of the log a rotated file was rotated from
// (audit.log for audit.log.<time>), or path itself when it is no rotated
// file's.
func RotatedFrom(path string) string {
	for i := len(path) - 1; i > 0; i-- {
		if path[i] != '.' {
			continue
		}
		if _, err := time.Parse(rotatedAtLayout, path[i+1:]); err == nil {
			return path[:i]
		}
	}
	return path
}

// ErrPruneNotWhole is a prune of files that are not the whole series: the
// pruned record would be written into a file the series has gone on from,
// and break its chain.
var ErrPruneNotWhole = errors.New("the files given are not the whole series")

// noSuccessor refuses files whose newest has a successor in its directory:
// the log it was rotated from (audit.log beside audit.log.<time>), or a
// file rotated after it, that the files given leave out. (A glob of
// audit.log.* leaves out audit.log: the pruned record went into the newest
// rotated file and took the sequence number of the anchor after it.)
func noSuccessor(files []string) error {
	newest := files[len(files)-1]
	given := map[string]bool{}
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		given[abs] = true
	}
	base := RotatedFrom(newest)
	candidates := []string{base}
	rotated, _, err := rotatedFiles(base)
	if err != nil {
		return err
	}
	candidates = append(candidates, rotated...)
	newestAbs, _ := filepath.Abs(newest)
	for _, c := range candidates {
		abs, _ := filepath.Abs(c)
		if given[abs] || abs == newestAbs {
			continue
		}
		if _, err := os.Stat(c); err != nil {
			continue
		}
		if c == base || c > newest {
			return fmt.Errorf("%w: %s goes on in %s, which was not given (give every file of the series: %s*)", ErrPruneNotWhole, filepath.Base(newest), filepath.Base(c), filepath.Base(base))
		}
	}
	return nil
}
