package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Problem is the first place where a log's chain breaks.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line"`
	What string `json:"what"`
}

func (p *Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What) }

// Verification is what Verify found.
type Verification struct {
	Files    []string `json:"files"` // in chain order
	Records  int      `json:"records"`
	FirstSeq uint64   `json:"firstSeq"`
	LastSeq  uint64   `json:"lastSeq"`
	Keyed    bool     `json:"keyed"`
	// Notes are chain events a reviewer should know of: chain starts and
	// their reasons, torn writes porthole acknowledged, a missing close.
	Notes []string `json:"notes"`
	// Problem is the first break, or nil when the chain holds.
	Problem *Problem `json:"problem,omitempty"`
}

// OK reports whether the chain holds.
func (v *Verification) OK() bool { return v.Problem == nil }

type logFile struct {
	path    string
	lines   [][]byte
	partial bool // the file does not end in a newline
	first   uint64
}

// Verify checks one log or a rotated series of logs, in any order: files are
// put in chain order by the sequence number of their first record. With a
// key it checks every record's HMAC; without one, only the links, which
// anyone able to edit the files could rewrite. An error means a file could
// not be read; a broken chain is reported in the result.
func Verify(paths []string, key []byte) (*Verification, error) {
	v := &Verification{Keyed: key != nil, Notes: []string{}}
	if key == nil {
		v.Notes = append(v.Notes, "no key was given: the HMACs were not checked, so an editor of the files could have rewritten the whole chain")
	}
	files, problem, err := readChainOrder(paths)
	if err != nil {
		return nil, err
	}
	if problem != nil {
		v.Problem = problem
		return v, nil
	}
	w := &chainWalk{v: v, key: key}
	v.Problem = w.walk(files)
	return v, nil
}

// readChainOrder reads the files and sorts them by their first record's
// sequence number. A file holding no record is a Problem, not an error:
// it was read, and what it holds breaks the chain.
func readChainOrder(paths []string) ([]*logFile, *Problem, error) {
	var files []*logFile
	for _, p := range paths {
		f, hasRecord, err := readLogFile(p)
		if err != nil {
			return nil, nil, err
		}
		if !hasRecord {
			return nil, &Problem{File: p, Line: 1, What: "the file holds no audit record"}, nil
		}
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].first < files[j].first })
	return files, nil, nil
}

// readLogFile reads a file into lines and finds its first record's sequence
// number; hasRecord is false when no line parses as a record.
func readLogFile(path string) (f *logFile, hasRecord bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	f = &logFile{path: path, partial: len(b) > 0 && b[len(b)-1] != '\n'}
	if len(b) > 0 {
		f.lines = bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	}
	for _, l := range f.lines {
		if e, err := parseLine(l, nil); err == nil {
			f.first = e.Seq
			return f, true, nil
		}
	}
	return f, false, nil
}

// chainWalk follows the chain through files in chain order, line by line,
// filling in v and stopping at the first break.
type chainWalk struct {
	v         *Verification
	key       []byte
	started   bool // a record has been accepted
	expectSeq uint64
	lastHash  string
	last      Entry
	// A line that is not a record may be a torn write that porthole
	// acknowledged with a chain-start on the next line; it is held here
	// until that line decides. tornAt is 0 when none is held.
	tornAt     int
	tornFile   string
	tornBefore string // hash of the line before the torn one
}

// walk checks every line of every file and returns the first break, or nil.
func (w *chainWalk) walk(files []*logFile) *Problem {
	for fi, f := range files {
		w.v.Files = append(w.v.Files, f.path)
		for i, line := range f.lines {
			cutShort := fi == len(files)-1 && i == len(f.lines)-1 && f.partial
			if p := w.line(f.path, i, fi, line, cutShort); p != nil {
				return p
			}
		}
	}
	if w.tornAt != 0 {
		return w.tornProblem()
	}
	if w.started && w.last.Kind != KindClose {
		w.v.Notes = append(w.v.Notes, "the log ends without a close record: porthole is still running, stopped without closing, or records were removed from the end")
	}
	return nil
}

// line checks the i'th line of the fi'th file. cutShort says it is the
// series' last line and lacks its newline.
func (w *chainWalk) line(path string, i, fi int, line []byte, cutShort bool) *Problem {
	n := i + 1
	e, err := parseLine(line, w.key)
	if err != nil {
		return w.notARecord(path, n, line, err, cutShort)
	}
	if p := w.settleTorn(e); p != nil {
		return p
	}
	if p := checkLink(path, n, i == 0, fi, w.started, e, w.expectSeq, w.lastHash); p != nil {
		return p
	}
	if e.Kind == KindChainStart {
		w.v.Notes = append(w.v.Notes, fmt.Sprintf("%s:%d: a new chain starts at seq %d: %s", path, n, e.Seq, e.Reason))
	}
	if !w.started {
		w.v.FirstSeq, w.started = e.Seq, true
	}
	w.v.Records++
	w.v.LastSeq = e.Seq
	w.expectSeq, w.lastHash, w.last = e.Seq+1, lineHash(line), e
	return nil
}

// notARecord decides what a line that does not parse means: an edit when
// its HMAC is wrong, a truncation when it is the cut-short end of the
// series, and otherwise perhaps a torn write, which the next record decides.
func (w *chainWalk) notARecord(path string, n int, line []byte, err error, cutShort bool) *Problem {
	if errors.Is(err, errBadMAC) {
		return &Problem{path, n, "the record's HMAC does not match: it was edited, or inserted by someone without the key"}
	}
	if cutShort {
		return &Problem{path, n, "the log is truncated: its last line is cut short"}
	}
	if w.tornAt != 0 {
		return w.tornProblem()
	}
	w.tornAt, w.tornFile, w.tornBefore = n, path, w.lastHash
	w.lastHash = lineHash(line)
	return nil
}

// settleTorn decides a held torn line by the record after it: only a
// chain-start linking to the line before the torn one acknowledges it.
func (w *chainWalk) settleTorn(e Entry) *Problem {
	if w.tornAt == 0 {
		return nil
	}
	if e.Kind != KindChainStart || e.Prev != w.tornBefore {
		return w.tornProblem()
	}
	w.v.Notes = append(w.v.Notes, fmt.Sprintf("%s:%d: a torn write, acknowledged by the chain-start on the next line", w.tornFile, w.tornAt))
	w.lastHash, w.tornAt = w.tornBefore, 0
	return nil
}

func (w *chainWalk) tornProblem() *Problem {
	return &Problem{w.tornFile, w.tornAt, "the line is not an audit record: it was edited or corrupted"}
}

// checkLink checks that a record follows the one before it.
func checkLink(path string, line int, firstInFile bool, fileIndex int, started bool, e Entry, expectSeq uint64, lastHash string) *Problem {
	if !started {
		return nil // the first record given starts what can be checked
	}
	if e.Kind == KindChainStart {
		if e.Prev == "" && !firstInFile {
			return &Problem{path, line, "a chain-start that links to nothing, in the middle of a file"}
		}
		if e.Prev != "" && e.Prev != lastHash {
			return &Problem{path, line, "the chain-start does not link to the line before it: records were removed or edited"}
		}
		return nil
	}
	switch {
	case e.Seq > expectSeq && firstInFile && fileIndex > 0:
		return &Problem{path, line, fmt.Sprintf("records %d to %d are missing: a file of the series is missing", expectSeq, e.Seq-1)}
	case e.Seq > expectSeq:
		return &Problem{path, line, fmt.Sprintf("records %d to %d are missing: they were deleted", expectSeq, e.Seq-1)}
	case e.Seq < expectSeq:
		return &Problem{path, line, fmt.Sprintf("record %d comes after record %d: records were reordered or duplicated", e.Seq, expectSeq-1)}
	case e.Prev != lastHash && firstInFile && fileIndex > 0:
		return &Problem{path, line, "the first record does not link to the last record of " + filepath.Base(path) + "'s predecessor: a file is missing or was edited"}
	case e.Prev != lastHash:
		return &Problem{path, line, "the record does not link to the line before it: a record was deleted, inserted or reordered"}
	}
	return nil
}
