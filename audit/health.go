package audit

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// ErrLowSpace means a call record was refused because the log's file system
// has less free space than Config.MinFreeBytes. It wraps nothing; the error
// Write returns wraps both it and ErrUnavailable.
var ErrLowSpace = errors.New("the audit log's file system is below its minimum free space")

// errLowSpaceRefusal is made once: a refusal costs no allocation.
var errLowSpaceRefusal = fmt.Errorf("%w: %w", ErrUnavailable, ErrLowSpace)

// Stats are what the log has done since it opened, for metrics. Reading
// them takes no lock and allocates nothing.
type Stats struct {
	// BytesWritten counts the bytes the sink took: records, and the
	// newlines that end lines a failed write tore.
	BytesWritten uint64
	// WriteFailures counts writes to the sink that failed (a rotation
	// that failed is one), whoever asked for them: callers of Write, and
	// the log itself (checkpoints, and the chain-start it owes after a
	// failed write, which it tries again every SyncInterval).
	WriteFailures uint64
	// SyncFailures counts fsyncs that failed: after a record (FsyncAlways,
	// whose Write then failed) or of an interval.
	SyncFailures uint64
	// Timeouts counts Writes the sink did not answer within the timeout.
	Timeouts uint64
	// LowSpaceRefusals counts call records refused for want of free space.
	LowSpaceRefusals uint64
	// WitnessFailures counts checkpoints that could not be appended to the
	// witness file (the log's own checkpoint record stands; a cut after it
	// can no longer be proven by that file).
	WitnessFailures uint64
	// FreeBytes is the free space of the log's file system, available to
	// an unprivileged process, at the last check; -1 for a stream, which
	// has none to check.
	FreeBytes int64
}

// Stats says what the log has done since it opened.
func (l *Log) Stats() Stats {
	return Stats{
		BytesWritten:     l.stats.bytes.Load(),
		WriteFailures:    l.stats.writeFailures.Load(),
		SyncFailures:     l.stats.syncFailures.Load(),
		Timeouts:         l.stats.timeouts.Load(),
		LowSpaceRefusals: l.stats.lowSpace.Load(),
		WitnessFailures:  l.stats.witnessFailures.Load(),
		FreeBytes:        l.stats.freeBytes.Load(),
	}
}

// Problem says in a sentence why the sink cannot be trusted to take records
// now, or "" when it can. The sink fails:
//
//   - while the log's file system has less free space than MinFreeBytes
//     (checked every SyncInterval, and after every quarter of MinFreeBytes
//     written), until a check finds enough;
//   - after a write to the sink failed, until a write succeeds: the log
//     tries every SyncInterval with the chain-start record it owes anyway
//     (which says that a write failed), so that it recovers without calls;
//   - after an fsync failed, until one succeeds (tried every SyncInterval);
//   - after a Write found the sink did not answer within the timeout,
//     until the log's goroutine is back: it finished what held it, or had
//     time for its ticker.
//
// Several at once: the first in that order.
func (l *Log) Problem() string { return l.health.problem() }

// stats are the counters behind Stats, written by the loop and by Write.
type stats struct {
	bytes, writeFailures, syncFailures, timeouts, lowSpace, witnessFailures atomic.Uint64
	freeBytes                                                               atomic.Int64
}

// A problemKind is one way the sink fails; the order is Problem's.
type problemKind uint

const (
	problemLowSpace problemKind = iota
	problemWrite
	problemSync
	problemTimeout
	problemHungSync
	// problemTree: the Merkle tree stopped taking records (Config.Origin).
	problemTree
	// problemWitnesses: too few witnesses keep up (Config.WitnessMaxLag).
	problemWitnesses
	numProblems
)

// health holds the sink's problems. Raising and clearing take a lock, but
// only when something changes: the check on the path of every record is
// one atomic load.
type health struct {
	raised atomic.Uint32 // bit k: problems[k] != ""
	mu     sync.Mutex
	// problems are the sentences of the problems raised, by kind.
	problems [numProblems]string
	// onChange is Config.OnProblem.
	onChange func(problem string, recovered bool)
}

func (h *health) has(k problemKind) bool { return h.raised.Load()&(1<<k) != 0 }

// raise records a problem of kind k. Only a problem new to its kind is
// told to onChange: an episode is told once, however often it is raised.
func (h *health) raise(k problemKind, sentence string) {
	h.mu.Lock()
	was := h.problems[k]
	h.problems[k] = sentence
	h.raised.Or(1 << k)
	h.mu.Unlock()
	if was == "" && h.onChange != nil {
		h.onChange(sentence, false)
	}
}

// clear ends a problem of kind k, if there is one.
func (h *health) clear(k problemKind) {
	if !h.has(k) {
		return
	}
	h.mu.Lock()
	was := h.problems[k]
	h.problems[k] = ""
	h.raised.And(^uint32(1 << k))
	h.mu.Unlock()
	if was != "" && h.onChange != nil {
		h.onChange(was, true)
	}
}

func (h *health) problem() string {
	if h.raised.Load() == 0 {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.problems {
		if p != "" {
			return p
		}
	}
	return ""
}

// minSpaceCheckBytes bounds how often writing checks the free space: a
// statfs per 64 KiB written at most, whatever MinFreeBytes is.
const minSpaceCheckBytes = 64 << 10

// sinkFreeSpace is the free space of the file system of the log's file
// (the one open now: rotation replaces it) available to an unprivileged
// process; root's reserve, which porthole should not count on, is left out.
func (l *Log) sinkFreeSpace() (int64, error) {
	f, ok := l.sink.(*os.File)
	if !ok {
		return 0, errors.New("the audit sink is not a file")
	}
	return availableBytes(int(f.Fd()))
}

// checkSpace reads the free space of the log's file system, and raises or
// clears the low-space problem. Called by the loop (and by Open before it
// starts): every tick, and when a quarter of MinFreeBytes was written since
// the last check. A statfs that fails changes nothing: the writes say
// whether the sink works.
func (l *Log) checkSpace() {
	if l.freeSpace == nil {
		return
	}
	l.sinceSpaceCheck = 0
	free, err := l.freeSpace()
	if err != nil {
		return
	}
	l.stats.freeBytes.Store(free)
	if floor := l.cfg.MinFreeBytes; floor > 0 && free < floor {
		l.health.raise(problemLowSpace, fmt.Sprintf("the audit log's file system has %d bytes free, less than the %d kept free (PORTHOLE_AUDIT_MIN_FREE_BYTES): calls are refused until space is freed", free, floor))
		return
	}
	l.health.clear(problemLowSpace)
}

// wrote counts n bytes the sink took, and checks the free space when enough
// were written since the last check.
func (l *Log) wrote(n int) {
	l.stats.bytes.Add(uint64(n))
	l.sinceSpaceCheck += int64(n)
	if l.cfg.MinFreeBytes > 0 && l.sinceSpaceCheck >= max(l.cfg.MinFreeBytes/4, minSpaceCheckBytes) {
		l.checkSpace()
	}
}

// writeFailure counts a failed write to the sink and raises its problem.
func (l *Log) writeFailure(err error) {
	l.stats.writeFailures.Add(1)
	l.health.raise(problemWrite, fmt.Sprintf("a write to the audit log failed (%v): calls are refused until a write succeeds (porthole tries again every %s)", err, l.cfg.SyncInterval))
}

// syncFailure counts a failed fsync and raises its problem.
func (l *Log) syncFailure(err error) {
	l.stats.syncFailures.Add(1)
	l.health.raise(problemSync, fmt.Sprintf("an fsync of the audit log failed (%v): records may not be on disk (porthole tries again every %s)", err, l.cfg.SyncInterval))
}

// timedOut counts a Write the sink did not answer in time and raises its
// problem, which the loop clears when it is back.
func (l *Log) timedOut() {
	l.stats.timeouts.Add(1)
	l.health.raise(problemTimeout, fmt.Sprintf("the audit log did not take a record within %s: its sink is blocked or slow, and calls are refused until it answers", l.cfg.Timeout))
}
