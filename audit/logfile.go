package audit

import (
	"bufio"
	"errors"
	"io"
	"os"
)

// A LogFile is one file of a log as verify and report walk it: read line by
// line each time it is walked, never whole, so that the memory a trail
// takes to verify does not grow with the trail (a 34 MB log took 99 MB when
// files were read whole).
type LogFile struct {
	Path    string
	Partial bool // the file does not end in a newline
	First   uint64
}

// maxLineBytes bounds a line read from a log. No record comes near it; a
// longer line is read as its first maxLineBytes, which parse as no record.
const maxLineBytes = 16 << 20

// walked, in tests, is told of every walk of a file that read it through.
var walked func(path string)

// ErrStopWalk ends a walk of a file early; each returns nil for it.
var ErrStopWalk = errors.New("stop")

// ReadLogFile finds a file's first record's sequence number and whether
// it ends in a newline; hasRecord is false when no line parses as a
// record.
func ReadLogFile(path string) (f *LogFile, hasRecord bool, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, false, err
	}
	f = &LogFile{Path: path}
	if size := st.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := fh.ReadAt(last, size-1); err != nil {
			fh.Close()
			return nil, false, err
		}
		f.Partial = last[0] != '\n'
	}
	fh.Close()
	err = f.Each(func(_ int, l []byte, _ bool) error {
		if e, err := ParseLineKey(l, nil); err == nil {
			f.First, hasRecord = e.Seq, true
			return ErrStopWalk
		}
		return nil
	})
	return f, hasRecord, err
}

// Each calls fn with each line of the file in order, without its newline:
// its index, the line (valid only until fn returns: two buffers take
// turns, the line and the one read ahead to know which is last), and
// whether it is the file's last. The lines are those of the file's
// contents split at newlines, the last newline not starting a line. fn
// returning errStop ends the walk.
func (f *LogFile) Each(fn func(i int, line []byte, last bool) error) error {
	fh, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer fh.Close()
	r := bufio.NewReaderSize(fh, 256<<10)
	var bufs [2][]byte
	cur, curNL, err := readLine(r, bufs[0][:0])
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	bufs[0] = cur
	for i := 0; ; i++ {
		next, nextNL, err := readLine(r, bufs[(i+1)%2][:0])
		if err != nil && err != io.EOF {
			return err
		}
		last := err == io.EOF
		if last {
			// Whether the file ends mid-line is decided by what this walk
			// read: a log porthole is still writing may have grown since
			// it was first looked at.
			f.Partial = !curNL
		}
		if err := fn(i, cur, last); err != nil {
			return Stopped(err)
		}
		if last {
			if walked != nil {
				walked(f.Path)
			}
			return nil
		}
		bufs[(i+1)%2], cur, curNL = next, next, nextNL
	}
}

func Stopped(err error) error {
	if errors.Is(err, ErrStopWalk) {
		return nil
	}
	return err
}

// readLine reads one line without its newline, at most maxLineBytes of
// it, into buf, and says whether a newline ended it; io.EOF when the file
// holds no more.
func readLine(r *bufio.Reader, buf []byte) (line []byte, nl bool, err error) {
	line = buf
	read := 0
	for {
		chunk, err := r.ReadSlice('\n')
		read += len(chunk)
		if len(line) < maxLineBytes {
			line = append(line, chunk[:min(len(chunk), maxLineBytes-len(line))]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && read == 0:
			return nil, false, io.EOF
		case err != nil && err != io.EOF:
			return nil, false, err
		}
		nl = err == nil // ReadSlice stops at a newline without error
		if n := len(line); nl && n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		return line, nl, nil
	}
}
