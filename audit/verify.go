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
	var files []*logFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f := &logFile{path: p, partial: len(b) > 0 && b[len(b)-1] != '\n'}
		if len(b) > 0 {
			f.lines = bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		}
		found := false
		for _, l := range f.lines {
			if e, err := parseLine(l, nil); err == nil {
				f.first, found = e.Seq, true
				break
			}
		}
		if !found {
			v.Problem = &Problem{File: p, Line: 1, What: "the file holds no audit record"}
			return v, nil
		}
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].first < files[j].first })

	var (
		started    bool
		expectSeq  uint64
		lastHash   string
		last       Entry
		tornAt     = 0 // line of an unacknowledged torn line in the current file
		tornFile   string
		tornBefore string // hash of the line before the torn one
	)
	for fi, f := range files {
		v.Files = append(v.Files, f.path)
		for i, line := range f.lines {
			n := i + 1
			isLast := fi == len(files)-1 && i == len(f.lines)-1
			e, err := parseLine(line, key)
			if err != nil {
				if errors.Is(err, errBadMAC) {
					v.Problem = &Problem{f.path, n, "the record's HMAC does not match: it was edited, or inserted by someone without the key"}
					return v, nil
				}
				if isLast && f.partial {
					v.Problem = &Problem{f.path, n, "the log is truncated: its last line is cut short"}
					return v, nil
				}
				if tornAt == 0 {
					// Maybe a torn write that porthole acknowledged with a
					// chain-start on the next line; decided there.
					tornAt, tornFile, tornBefore = n, f.path, lastHash
					lastHash = lineHash(line)
					continue
				}
				v.Problem = &Problem{tornFile, tornAt, "the line is not an audit record: it was edited or corrupted"}
				return v, nil
			}
			if tornAt != 0 {
				if e.Kind != KindChainStart || e.Prev != tornBefore {
					v.Problem = &Problem{tornFile, tornAt, "the line is not an audit record: it was edited or corrupted"}
					return v, nil
				}
				v.Notes = append(v.Notes, fmt.Sprintf("%s:%d: a torn write, acknowledged by the chain-start on the next line", tornFile, tornAt))
				lastHash, tornAt = tornBefore, 0
			}
			if p := checkLink(f.path, n, i == 0, fi, started, e, expectSeq, lastHash); p != nil {
				v.Problem = p
				return v, nil
			}
			if e.Kind == KindChainStart {
				v.Notes = append(v.Notes, fmt.Sprintf("%s:%d: a new chain starts at seq %d: %s", f.path, n, e.Seq, e.Reason))
			}
			if !started {
				v.FirstSeq, started = e.Seq, true
			}
			v.Records++
			v.LastSeq = e.Seq
			expectSeq, lastHash, last = e.Seq+1, lineHash(line), e
		}
	}
	if tornAt != 0 {
		v.Problem = &Problem{tornFile, tornAt, "the line is not an audit record: it was edited or corrupted"}
		return v, nil
	}
	if started && last.Kind != KindClose {
		v.Notes = append(v.Notes, "the log ends without a close record: porthole is still running, stopped without closing, or records were removed from the end")
	}
	return v, nil
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
