package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrUnavailable means a record could not be written in time. The gateway
// refuses the call that needed it.
var ErrUnavailable = errors.New("the audit log is unavailable")

// ErrClosed means the log was closed.
var ErrClosed = errors.New("the audit log is closed")

// ErrFsyncPolicy is returned by Open for an fsync policy it does not know.
var ErrFsyncPolicy = errors.New("unknown fsync policy")

// FsyncPolicy says when the sink is flushed to stable storage.
type FsyncPolicy string

const (
	// FsyncAlways syncs after every record, before Write returns: a call
	// is dispatched only once its record would survive a power loss.
	FsyncAlways FsyncPolicy = "always"
	// FsyncInterval syncs at most SyncInterval after a record was written.
	// Every record is still written with one write(2) before Write returns,
	// so it survives a crash of porthole; a power loss may lose the records
	// of the last interval.
	FsyncInterval FsyncPolicy = "interval"
)

// Config configures a Log.
type Config struct {
	// Path is a file, or "stdout" or "stderr".
	Path string
	// Key keys the HMAC of every record. At least 32 bytes.
	Key []byte
	// Timeout bounds how long Write waits for the sink. Default 2s.
	Timeout time.Duration
	// Fsync is FsyncInterval by default.
	Fsync FsyncPolicy
	// SyncInterval is 1s by default.
	SyncInterval time.Duration
	// MaxBytes rotates a file above this size; 0 never rotates.
	MaxBytes int64
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

// MinKeyBytes is the shortest audit key accepted.
const MinKeyBytes = 32

// NewKey makes a random key, for a log whose operator gave none: its chain
// holds within the process, but nobody can verify it afterwards.
func NewKey() []byte {
	k := make([]byte, MinKeyBytes)
	_, _ = rand.Read(k)
	return k
}

// sink is where lines go.
type sink interface {
	io.Writer
	Sync() error
	Close() error
}

// streamSink writes to a stream: stdout, stderr, a pipe or a device. A
// stream has no stable storage to sync (fsync on a pipe fails with
// EINVAL), and stdout and stderr are not porthole's to close.
type streamSink struct {
	f     *os.File
	close bool
}

func (s streamSink) Write(p []byte) (int, error) { return s.f.Write(p) }
func (s streamSink) Sync() error                 { return nil }
func (s streamSink) Close() error {
	if s.close {
		return s.f.Close()
	}
	return nil
}

// Log is the audit log. Its methods are safe for concurrent use; one
// goroutine owns the sink and writes records in the order it receives them.
type Log struct {
	cfg  Config
	reqs chan request
	quit chan struct{}
	done chan struct{}
	once sync.Once

	// Owned by the loop goroutine after Open returns.
	sink         sink
	rotatable    bool
	mac          hash.Hash // HMAC-SHA256 under cfg.Key, reset for each record
	body         []byte    // scratch for encoding a record
	seq          uint64
	prev         string
	size         int64
	dirty        bool
	syncing      atomic.Bool // an interval sync is running
	syncFailed   atomic.Bool // the last interval sync failed
	writeFailed  bool
	syncLost     bool // an interval sync failed; the next record says so
	lastWriteErr error
}

type request struct {
	rec   Record
	reply chan error
}

// Open opens the log and writes a chain-start record when it cannot continue
// the chain it finds. An error here means the sink cannot be written, and
// porthole should not start.
func Open(cfg Config) (*Log, error) {
	// An fsync policy the writer does not know would otherwise mean
	// interval: weaker durability than a caller who wrote "Always" asked for.
	if cfg.Fsync != "" && cfg.Fsync != FsyncAlways && cfg.Fsync != FsyncInterval {
		return nil, fmt.Errorf("%w: the audit fsync policy %q is not always or interval", ErrFsyncPolicy, cfg.Fsync)
	}
	if len(cfg.Key) < MinKeyBytes {
		return nil, fmt.Errorf("the audit key must be at least %d bytes; it is %d", MinKeyBytes, len(cfg.Key))
	}
	var s sink
	rotatable := false
	reason := ""
	var seq uint64
	prev := ""
	switch cfg.Path {
	case "", "stderr":
		s, reason = streamSink{f: os.Stderr}, "writing to stderr: a chain on a stream cannot be continued after a restart"
	case "stdout":
		s, reason = streamSink{f: os.Stdout}, "writing to stdout: a chain on a stream cannot be continued after a restart"
	default:
		var err error
		var partial bool
		if st, serr := os.Stat(cfg.Path); serr == nil && !st.Mode().IsRegular() {
			// A pipe or a device (a log shipper's FIFO, /dev/stdout):
			// there is nothing to read back. It is a stream: a new chain
			// each start. O_NONBLOCK makes opening a FIFO nobody reads
			// fail at once (ENXIO) rather than hang the start.
			f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
			if errors.Is(err, syscall.ENXIO) {
				return nil, fmt.Errorf("opening the audit log: %s is a pipe with no reader: start what reads it first", cfg.Path)
			}
			if err != nil {
				return nil, fmt.Errorf("opening the audit log: %w", err)
			}
			s, reason = streamSink{f: f, close: true}, "writing to a pipe or device: a chain on a stream cannot be continued after a restart"
			break
		}
		seq, prev, reason, partial, err = resume(cfg.Path, cfg.Key)
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the audit log: %w", err)
		}
		if partial {
			// End the torn line so that the next record starts a line of
			// its own; the torn line stays, and verify reports it.
			if _, err := f.Write([]byte("\n")); err != nil {
				f.Close()
				return nil, fmt.Errorf("writing the audit log: %w", err)
			}
		}
		s, rotatable = f, true
	}
	l := newLog(cfg, s, rotatable, seq, prev)
	if reason != "" {
		if err := l.write(Record{Kind: KindChainStart, Reason: reason}); err != nil {
			s.Close()
			return nil, err
		}
	}
	go l.loop()
	return l, nil
}

func newLog(cfg Config, s sink, rotatable bool, seq uint64, prev string) *Log {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Fsync == "" {
		cfg.Fsync = FsyncInterval
	}
	if cfg.SyncInterval <= 0 {
		cfg.SyncInterval = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Log{
		cfg: cfg, reqs: make(chan request), quit: make(chan struct{}), done: make(chan struct{}),
		sink: s, rotatable: rotatable, mac: hmac.New(sha256.New, cfg.Key), seq: seq, prev: prev,
	}
	if f, ok := s.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			l.size = st.Size()
		}
	}
	return l
}

// resume reads the last line of an existing log. When it verifies, the chain
// continues from it; otherwise reason says why a new chain starts.
func resume(path string, key []byte) (seq uint64, prev, reason string, partial bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", "a new audit log", false, nil
	}
	if err != nil {
		return 0, "", "", false, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", "", false, err
	}
	if st.Size() == 0 {
		return 0, "", "a new audit log", false, nil
	}
	const tail = 64 << 10
	off := max(0, st.Size()-tail)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", "", false, fmt.Errorf("reading the audit log: %w", err)
	}
	partial = buf[len(buf)-1] != '\n'
	lines := bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n"))
	if partial {
		if len(lines) < 2 {
			return 0, "", "the audit log ended in a torn line and holds no complete record to continue from", true, nil
		}
		last := lines[len(lines)-2]
		e, perr := parseLine(last, key)
		if perr != nil {
			return 0, lineHash(last), "the audit log ended in a torn line after a record that does not verify", true, nil
		}
		return e.Seq, lineHash(last), "the audit log ended in a torn line (a write was cut short)", true, nil
	}
	last := lines[len(lines)-1]
	e, perr := parseLine(last, key)
	switch {
	case errors.Is(perr, errBadMAC):
		return e.Seq, lineHash(last), "the last record does not verify with this key (another key, or an edit)", false, nil
	case perr != nil:
		return 0, lineHash(last), "the last line is not an audit record", false, nil
	}
	return e.Seq, lineHash(last), "", false, nil
}

// Write writes rec and returns once it is in the sink, or ErrUnavailable
// when the sink fails or does not answer within the timeout. A record that
// timed out may still be written later.
func (l *Log) Write(ctx context.Context, rec Record) error {
	timer := time.NewTimer(l.cfg.Timeout)
	defer timer.Stop()
	reply := make(chan error, 1)
	select {
	case l.reqs <- request{rec: rec, reply: reply}:
	case <-l.done:
		return ErrClosed
	case <-timer.C:
		return fmt.Errorf("%w: the sink did not accept a record within %s", ErrUnavailable, l.cfg.Timeout)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
	select {
	case err := <-reply:
		return err
	case <-timer.C:
		return fmt.Errorf("%w: the sink did not finish a write within %s", ErrUnavailable, l.cfg.Timeout)
	}
}

// Close writes a close record, syncs and closes the sink. A sink that does
// not answer is abandoned after the timeout.
func (l *Log) Close() error {
	l.once.Do(func() { close(l.quit) })
	select {
	case <-l.done:
		return l.lastWriteErr
	case <-time.After(l.cfg.Timeout):
		return fmt.Errorf("%w: the sink did not close within %s", ErrUnavailable, l.cfg.Timeout)
	}
}

// Seq is the sequence number of the last record written. Only for tests and
// for the log line porthole writes at shutdown, after Close.
func (l *Log) Seq() uint64 { return l.seq }

func (l *Log) loop() {
	defer close(l.done)
	tick := time.NewTicker(l.cfg.SyncInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-l.reqs:
			r.reply <- l.write(r.rec)
		case <-tick.C:
			if l.syncFailed.Swap(false) {
				// Linux may drop the pages a failed fsync could not write
				// and report the next fsync clean: retrying is not enough.
				// The next record says so (see write).
				l.dirty, l.syncLost = true, true
			}
			if l.dirty && !l.syncing.Load() {
				// fsync can take milliseconds (tens on a busy disk); done
				// here, it would hold up every record behind it. The
				// syncing goroutine is one at a time; a failed sync marks
				// the log dirty again for the next tick.
				l.dirty = false
				l.syncing.Store(true)
				go func(s sink) {
					defer l.syncing.Store(false)
					if err := s.Sync(); err != nil {
						l.syncFailed.Store(true)
					}
				}(l.sink)
			}
		case <-l.quit:
			l.lastWriteErr = l.write(Record{Kind: KindClose})
			if err := l.sink.Sync(); err != nil && l.lastWriteErr == nil {
				l.lastWriteErr = err
			}
			if err := l.sink.Close(); err != nil && l.lastWriteErr == nil {
				l.lastWriteErr = err
			}
			return
		}
	}
}

// write encodes and writes one record; called only by the loop (or by Open
// before the loop starts).
func (l *Log) write(rec Record) error {
	if l.writeFailed && rec.Kind != KindChainStart {
		// The last write failed and may have left a torn line. Start a new
		// line and say so before anything else.
		if _, err := l.sink.Write([]byte("\n")); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if err := l.write(Record{Kind: KindChainStart, Reason: fmt.Sprintf("a write to the audit sink failed after seq %d", l.seq)}); err != nil {
			return err
		}
	}
	if l.syncLost && rec.Kind != KindChainStart {
		l.syncLost = false
		if err := l.write(Record{Kind: KindChainStart, Reason: fmt.Sprintf("an fsync of the audit sink failed after seq %d: records before it may not be on disk", l.seq)}); err != nil {
			return err
		}
	}
	line := l.encode(&rec)
	if l.rotatable && l.cfg.MaxBytes > 0 && l.size > 0 && l.size+int64(len(line)) > l.cfg.MaxBytes && rec.Kind != KindAnchor {
		if err := l.rotate(); err != nil {
			return fmt.Errorf("%w: rotating: %v", ErrUnavailable, err)
		}
		line = l.encode(&rec)
	}
	n, err := l.sink.Write(line)
	l.size += int64(n)
	if err != nil {
		l.writeFailed = true
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	l.writeFailed = false
	l.seq++
	l.prev = lineHash(line)
	if l.cfg.Fsync == FsyncAlways {
		if err := l.sink.Sync(); err != nil {
			return fmt.Errorf("%w: syncing: %v", ErrUnavailable, err)
		}
	} else {
		l.dirty = true
	}
	return nil
}

func (l *Log) encode(rec *Record) []byte {
	b := append(l.body[:0], `{"time":"`...)
	b = l.cfg.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = strconv.AppendUint(append(b, `","seq":`...), l.seq+1, 10)
	b = appendString(append(b, `,"prev":`...), l.prev)
	b = append(rec.appendFields(b), '}')
	l.body = b
	return seal(l.mac, b)
}

// rotate renames the current file aside and starts a new one with an anchor
// record that links to the old file's last record.
func (l *Log) rotate() error {
	f := l.sink.(*os.File)
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	path := f.Name()
	aside := path + "." + l.cfg.Now().UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(path, aside); err != nil {
		return err
	}
	nf, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	l.sink, l.size, l.dirty = nf, 0, false
	return l.write(Record{Kind: KindAnchor, PreviousFile: filepath.Base(aside), PreviousLastSeq: l.seq})
}
