package audit

import (
	"encoding/hex"
	"sync"

	"github.com/porthole-dev/porthole/audit/merkle"

	"golang.org/x/mod/sumdb/tlog"
)

// A CheckedLine is what a line is, read on its own: its record (or why it
// is none: it does not parse, or its HMAC does not verify) and its hash;
// with a parser that hashes leaves, its Merkle tree leaf hash too.
type CheckedLine struct {
	Entry Entry
	Err   error
	Hash  string
	Leaf  tlog.Hash
}

// A lineBatch is consecutive lines of a file, read ahead of the walk and
// checked, each on its own, by a worker.
type lineBatch struct {
	buf     []byte
	ends    []int // line i is buf[ends[i-1]:ends[i]], from 0
	first   int   // the index of its first line in the file
	last    bool  // it holds the file's last line
	checked []CheckedLine
	done    chan struct{} // closed once checked is filled
}

// Check is what line is, read on its own.
func (p *LineParser) Check(line []byte) CheckedLine {
	e, err := p.parse(line)
	digest := lineDigest(line)
	c := CheckedLine{Entry: e, Err: err, Hash: hex.EncodeToString(digest[:])}
	if p.Leaves {
		c.Leaf = merkle.DigestLeafHash(digest)
	}
	return c
}

func (b *lineBatch) line(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.buf[start:b.ends[i]]
}

// A batch ends once it holds batchBytes or batchLines: so it holds at
// most batchBytes - 1 bytes and then one line, which is at most
// maxLineBytes. Only batchesInFlight batches are ever made, and they bound
// the memory a walk takes: each batch's bytes, and as much again in the
// strings its checked records copy out of them, so about
// 2 × batchesInFlight × (batchBytes + maxLineBytes), besides the two line
// buffers of each (docs/performance.md gives the figures). Not for a forged
// line whose record decodes to more than its bytes (many empty arguments):
// its checked record is held as decoded.
const (
	batchBytes      = 256 << 10
	batchLines      = 1024
	batchesInFlight = 4
	checkWorkers    = 2
)

// EachChecked is each, with every line checked by newParser's parser and
// hashed on other goroutines, ahead of fn and in any order; fn is called
// in the file's order, with the line and what it is. This is how a walk
// uses a second core: what each line is depends only on its bytes, and
// fn, which holds lines to one another, is left the cheap part.
func (f *LogFile) EachChecked(newParser func() *LineParser, fn func(i int, line []byte, c *CheckedLine, last bool) error) (err error) {
	work := make(chan *lineBatch, batchesInFlight)
	ordered := make(chan *lineBatch, batchesInFlight)
	free := make(chan *lineBatch, batchesInFlight)
	for range batchesInFlight {
		free <- &lineBatch{}
	}
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for range checkWorkers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			p := newParser()
			for b := range work {
				b.checked = b.checked[:0]
				for i := range b.ends {
					b.checked = append(b.checked, p.Check(b.line(i)))
				}
				close(b.done)
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(ordered)
		defer close(work)
		readErr <- f.readBatches(free, stop, func(b *lineBatch) bool {
			select {
			case ordered <- b:
			case <-stop:
				return false
			}
			work <- b // never blocks: no more batches than its room are out
			return true
		})
	}()
	// Deferred, so that the reader and the workers are stopped and
	// waited for however the walk ends: a panic in fn left them blocked
	// for good, each holding its batches.
	defer func() {
		close(stop)
		for range ordered { // what was read ahead is not walked
		}
		workers.Wait()
		if rerr := <-readErr; err == nil {
			err = rerr
		}
		err = Stopped(err)
	}()
	return walkBatches(ordered, free, fn)
}

// readBatches reads the file into batches taken from free and gives each
// to send, which says false when the walk has stopped.
func (f *LogFile) readBatches(free <-chan *lineBatch, stop <-chan struct{}, send func(*lineBatch) bool) error {
	var b *lineBatch
	next := func(i int) bool {
		select {
		case b = <-free:
		case <-stop:
			return false
		}
		b.buf, b.ends, b.first, b.last, b.done = b.buf[:0], b.ends[:0], i, false, make(chan struct{})
		return true
	}
	return f.Each(func(i int, line []byte, last bool) error {
		if b == nil && !next(i) {
			return ErrStopWalk
		}
		b.buf = append(b.buf, line...)
		b.ends = append(b.ends, len(b.buf))
		if !last && len(b.buf) < batchBytes && len(b.ends) < batchLines {
			return nil
		}
		b.last = last
		full := b
		b = nil
		if !send(full) {
			return ErrStopWalk
		}
		return nil
	})
}

// walkBatches calls fn with each line of the batches in order, each once
// it is checked, and gives every batch walked back to free.
func walkBatches(ordered <-chan *lineBatch, free chan<- *lineBatch, fn func(i int, line []byte, c *CheckedLine, last bool) error) error {
	for b := range ordered {
		<-b.done
		for i := range b.ends {
			if err := fn(b.first+i, b.line(i), &b.checked[i], b.last && i == len(b.ends)-1); err != nil {
				return err
			}
		}
		// Security: a batch is cut, not made anew, when it is filled
		// again, so the records it held would stay reachable past its new
		// length: a file of batches each shorter than the last would keep
		// one of them per batch, up to 16 MiB of strings each, and a walk
		// that reads past a break would grow with the file.
		clear(b.checked)
		free <- b
	}
	return nil
}
