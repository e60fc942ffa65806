package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
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

	// Signer, when set, signs a checkpoint every CheckpointEvery records
	// (default 1000), every CheckpointInterval (default 1m) when records
	// were written since the last, and at Close: a checkpoint record in the
	// log, a line appended to CheckpointPath (when set; synced before the
	// loop goes on), and a call of OnCheckpoint (when set), with the error
	// of the witness write, which porthole logs. See Checkpoint.
	Signer         ed25519.PrivateKey
	CheckpointPath string
	// Origin, when set with a Signer and a file Path, keeps the log's
	// records as the leaves of a Merkle tree (audit/merkle) whose hashes
	// are in Path+".tree", and gives each checkpoint the C2SP
	// tlog-checkpoint note of the tree under this origin (Checkpoint.Note):
	// the name of this series of this trail, known before it starts and
	// never made anew at a restart.
	Origin string
	// Witnesses, with an Origin, are sent each checkpoint's note once the
	// checkpoint file holds it (audit/witness.Sender), and their
	// cosignatures are kept in Path+".cosignatures". With
	// WitnessMaxLag, call records are refused (ErrUnavailable) while
	// fewer than WitnessQuorum witnesses have cosigned every checkpoint
	// sent more than WitnessMaxLag ago. WitnessClient is their HTTP
	// client.
	Witnesses          []witness.Witness
	WitnessQuorum      int
	WitnessMaxLag      time.Duration
	WitnessClient      *http.Client
	CheckpointEvery    int
	CheckpointInterval time.Duration
	OnCheckpoint       func(c Checkpoint, witnessErr error)

	// MaxAge, when set with a Signer and a file Path, removes rotated files
	// rotated longer ago than MaxAge, oldest first, after a signed pruned
	// record (see Prune), checked at each rotation and every minute.
	// OnPruned, when set, is told what was removed, or why pruning failed
	// (nothing after the failure was removed).
	MaxAge   time.Duration
	OnPruned func(files []string, err error)

	// MinFreeBytes, when set with a file Path, refuses call records (and
	// only those) while the log's file system has less free space than
	// this, so that the space left takes what must not be lost: the result
	// records of calls whose call records were written, denials,
	// checkpoints, the close record. See Log.Problem.
	MinFreeBytes int64
	// OnProblem, when set, is told when the sink starts failing in a way
	// it was not (recovered false), and when that ends (recovered true),
	// with Problem's sentence for it: once per episode. It is called from
	// the log's goroutines and from Write's callers, and must not block.
	OnProblem func(problem string, recovered bool)
}

// Checkpoint defaults: a tail cut or a lost newest file goes unproven for
// at most a minute or a thousand records, for one signature (tens of
// microseconds) and one synced append to the witness file per checkpoint.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = time.Minute
)

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
	syncing      atomic.Bool  // an interval sync is running
	syncStarted  atomic.Int64 // when it began, in Unix nanoseconds
	syncFailed   atomic.Bool  // the last interval sync failed
	writeFailed  bool
	torn         bool // a failed write left part of a line; the next write ends it
	syncLost     bool // an interval sync failed; the next record says so
	lastWriteErr error

	stats  stats
	health health
	// freeSpace reads the free space of the sink's file system; nil for a
	// stream. sinceSpaceCheck counts bytes written since it was last read.
	freeSpace       func() (int64, error)
	sinceSpaceCheck int64

	rotated         bool     // a rotation happened since the loop last pruned
	kid             string   // KeyID of cfg.Key, in every record
	chain           string   // the chain's identity
	witness         *os.File // CheckpointPath, open for appending
	witnessTorn     bool     // the last witness write failed
	sinceCheckpoint int      // records written since the last checkpoint
	lastCheckpoint  time.Time

	// tree holds the records as a Merkle tree's leaves (Config.Origin);
	// nil without one. treeErr is why it stopped taking records: then
	// checkpoints carry no note, and Problem says so.
	tree    *merkle.Tree
	treeErr error
	// sender sends checkpoints to the witnesses; nil without any.
	sender *witness.Sender
}

type request struct {
	rec   Record
	reply chan error
}

// openSink opens where cfg.Path says records go: a stream (stderr,
// stdout, a pipe or a device), on which a chain starts anew each time, or
// a file, whose chain is resumed and which can be rotated.
func openSink(cfg Config) (s sink, rotatable bool, st resumed, err error) {
	switch cfg.Path {
	case "", "stderr":
		st.reason = "writing to stderr: a chain on a stream cannot be continued after a restart"
		return streamSink{f: os.Stderr}, false, st, nil
	case "stdout":
		st.reason = "writing to stdout: a chain on a stream cannot be continued after a restart"
		return streamSink{f: os.Stdout}, false, st, nil
	}
	if fi, serr := os.Stat(cfg.Path); serr == nil && !fi.Mode().IsRegular() {
		s, err := openPipe(cfg.Path)
		st.reason = "writing to a pipe or device: a chain on a stream cannot be continued after a restart"
		return s, false, st, err
	}
	if st, err = resume(cfg.Path, cfg.Key); err != nil {
		return nil, false, st, err
	}
	f, err := openLocked(cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, false, st, err
	}
	if st.partial {
		// End the torn line so that the next record starts a line of
		// its own; the torn line stays, and verify reports it.
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, false, st, fmt.Errorf("writing the audit log: %w", err)
		}
	}
	return f, true, st, nil
}

// openPipe opens a pipe or a device (a log shipper's FIFO, /dev/stdout):
// there is nothing to read back. O_NONBLOCK makes opening a FIFO nobody
// reads fail at once (ENXIO) rather than hang the start.
func openPipe(path string) (sink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("opening the audit log: %s is a pipe with no reader: start what reads it first", path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return streamSink{f: f, close: true}, nil
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
	s, rotatable, st, err := openSink(cfg)
	if err != nil {
		return nil, err
	}
	if !rotatable && cfg.CheckpointPath != "" {
		// A stream has nothing to read back at a restart: its chain
		// starts anew each time, and a witness of the last one would
		// only make the new one claim records missing.
		s.Close()
		return nil, fmt.Errorf("a checkpoint file needs an audit log that is a file, not %s", cfg.Path)
	}
	witness, err := openWitness(cfg, &st)
	if err != nil {
		s.Close()
		return nil, err
	}
	tree, err := openTree(cfg, rotatable, &st)
	if err != nil {
		s.Close()
		if witness != nil {
			witness.Close()
		}
		return nil, err
	}
	l := newLog(cfg, s, rotatable, st.seq, st.prev)
	l.chain, l.witness, l.tree = st.chain, witness, tree
	if l.sender, err = openSender(cfg); err != nil {
		l.closeFiles()
		return nil, err
	}
	if st.reason != "" {
		rec := Record{Kind: KindChainStart, Reason: st.reason, MissingFrom: st.missingFrom, MissingTo: st.missingTo}
		if err := l.write(rec); err != nil {
			l.closeFiles()
			return nil, err
		}
	}
	go l.loop()
	return l, nil
}

// ErrLogInUse means another process writes the audit log.
var ErrLogInUse = errors.New("another process is writing this audit log")

// openLocked opens an audit log file and takes an exclusive advisory lock
// on it, held while the file is open. Two writers of one file would
// interleave two chains that neither verifies; and `porthole audit prune`
// must not write into a log porthole is writing.
func openLocked(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLogInUse, path)
		}
		return nil, fmt.Errorf("locking the audit log: %w", err)
	}
	return f, nil
}

// closeFiles closes the sink and the witness file.
func (l *Log) closeFiles() error {
	err := l.sink.Close()
	if l.sender != nil {
		l.sender.Close()
	}
	if l.tree != nil {
		if terr := l.tree.Close(); err == nil {
			err = terr
		}
	}
	if l.witness != nil {
		if werr := l.witness.Close(); err == nil {
			err = werr
		}
	}
	return err
}

// openWitness reads the latest checkpoint of the witness file, which
// decides where the chain continues (see continueFrom), and opens the file
// for appending.
func openWitness(cfg Config, st *resumed) (*os.File, error) {
	if cfg.Signer == nil || cfg.CheckpointPath == "" {
		st.settleChain(nil)
		return nil, nil
	}
	f, err := os.OpenFile(cfg.CheckpointPath, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit checkpoint file: %w", err)
	}
	// One writer per witness: two replicas given one file would each
	// continue from the other's checkpoints.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the audit checkpoint file %s (another porthole writing it?): %w", cfg.CheckpointPath, err)
	}
	cp, err := witnessedLatest(cfg.CheckpointPath, st.chain)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading the audit checkpoint file: %w", err)
	}
	st.settleChain(cp)
	if cp != nil && cp.Note != "" {
		st.noteOrigin, _, _ = strings.Cut(cp.Note, "\n")
	}
	// A witness write cut short leaves a torn line: end it, so the next
	// checkpoint is a line of its own.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			if _, err := f.Write([]byte("\n")); err != nil {
				f.Close()
				return nil, fmt.Errorf("writing the audit checkpoint file: %w", err)
			}
		}
	}
	return f, nil
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
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = DefaultCheckpointEvery
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	l := &Log{
		cfg: cfg, reqs: make(chan request), quit: make(chan struct{}), done: make(chan struct{}),
		sink: s, rotatable: rotatable, mac: hmac.New(sha256.New, cfg.Key), seq: seq, prev: prev,
		kid: KeyID(cfg.Key),
	}
	if cfg.Signer != nil {
		l.lastCheckpoint = cfg.Now()
	}
	l.health.onChange = cfg.OnProblem
	l.stats.freeBytes.Store(-1)
	if f, ok := s.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			l.size = st.Size()
		}
		l.freeSpace = l.sinkFreeSpace
		l.checkSpace()
	}
	return l
}

// resumed is where a log found on disk leaves the chain: the last record's
// sequence number and line hash, the chain's identity (from the file's
// first record), and, when the chain cannot simply go on, the reason for
// the chain-start that says so.
type resumed struct {
	seq                 uint64
	prev, reason, chain string
	// last is the file's last complete line that has a record's shape,
	// which the Merkle tree is held to (see openTree); noteOrigin is the
	// origin of the checkpoint file's latest tree note, if any.
	last                   []byte
	noteOrigin             string
	partial                bool // the file ends in a torn line
	missingFrom, missingTo uint64
}

// settleChain decides, with the latest witnessed checkpoint (or nil),
// where the chain continues: from the larger of the log's last sequence
// number and the checkpoint's, so that no sequence number is used twice.
// A log shorter than its checkpoint (its tail cut, or the log deleted)
// gets a chain-start naming the missing records. A chain with no identity
// gets the checkpoint's, or a new one.
func (st *resumed) settleChain(cp *Checkpoint) {
	if cp != nil && (st.chain == "" || st.chain == cp.Chain) && cp.Seq > st.seq {
		st.reason = fmt.Sprintf("the log ends at seq %d, but a checkpoint witnessed seq %d: records %d to %d are missing", st.seq, cp.Seq, st.seq+1, cp.Seq)
		st.missingFrom, st.missingTo, st.chain = st.seq+1, cp.Seq, cp.Chain
		if st.prev == "" {
			st.prev = cp.Hash
		}
		st.seq = cp.Seq
	}
	if st.chain == "" {
		st.chain = newChainID()
		if st.reason == "" {
			st.reason = "the log names no chain identity (it was written before schema version 2): this chain-start gives it one"
		}
	}
}

func newChainID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// resume reads the end of an existing log (or, when the log is missing
// or empty, of the newest file rotated aside from it) and the chain's
// identity. When the last record verifies, the chain continues from it;
// otherwise reason says why a new chain starts.
func resume(path string, key []byte) (resumed, error) {
	st, found, err := resumeFile(path, key)
	if err != nil || found {
		return st, err
	}
	// The current file is missing or empty: a crash after a rotation, or
	// the file lost. The newest rotated file holds where the chain was, so
	// that no sequence number it holds is used again.
	rotated, _, err := rotatedFiles(path)
	if err != nil || len(rotated) == 0 {
		return resumed{reason: "a new audit log"}, err
	}
	newest := rotated[len(rotated)-1]
	st, found, err = resumeFile(newest, key)
	if err != nil || !found {
		return resumed{reason: "a new audit log"}, err
	}
	st.partial = false // the torn line is in the other file
	if st.reason == "" {
		st.reason = fmt.Sprintf("the audit log %s is missing or empty: the chain continues from the newest rotated file, %s", filepath.Base(path), filepath.Base(newest))
	}
	return st, nil
}

// resumeFile is resume for one file; found is false when the file is
// missing or empty.
func resumeFile(path string, key []byte) (st resumed, found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return resumed{}, false, nil
	}
	if err != nil {
		return resumed{}, false, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return resumed{}, false, err
	}
	if fi.Size() == 0 {
		return resumed{}, false, nil
	}
	lines, partial, err := tailLines(f, fi.Size())
	if err != nil {
		return resumed{}, false, fmt.Errorf("reading the audit log: %w", err)
	}
	st = resumed{chain: findChain(f, lines), partial: partial}
	last := lines[len(lines)-1]
	if st.partial {
		if len(lines) < 2 {
			st.seq, st.reason = lastSeq(lines), "the audit log ended in a torn line and holds no complete record to continue from"
			return st, true, nil
		}
		last = lines[len(lines)-2]
	}
	st.continueFrom(last, lines, key)
	st.last = lastRecordLine(lines, st.partial)
	return st, true, nil
}

// continueFrom resumes the chain after the last complete line, last, of
// lines, or says why a new chain starts: a torn line, a record that does
// not verify with key (and whether the key was rotated), or a line that is
// no record.
func (st *resumed) continueFrom(last []byte, lines [][]byte, key []byte) {
	e, perr := ParseLineKey(last, key)
	st.seq, st.prev = e.Seq, LineHash(last)
	switch {
	case perr == nil && st.partial:
		st.reason = "the audit log ended in a torn line (a write was cut short)"
	case perr == nil:
	case st.partial:
		st.seq, st.reason = lastSeq(lines), "the audit log ended in a torn line after a record that does not verify"
	case errors.Is(perr, ErrBadMAC) && e.KeyID != "" && e.KeyID != KeyID(key):
		st.reason = fmt.Sprintf("the last record was written under HMAC key %s and this is key %s: the key was rotated", e.KeyID, KeyID(key))
	case errors.Is(perr, ErrBadMAC):
		st.reason = "the last record does not verify with this key (another key, or an edit)"
	default:
		st.seq, st.reason = lastSeq(lines), "the last line is not an audit record"
	}
}

// tailLines reads the end of a file as lines: at least its last two whole
// lines (or the whole file), reading further back while the window holds
// less, so that a record longer than the window (a call's arguments may
// make one of tens of KiB) is read whole. partial says the file does not
// end in a newline.
func tailLines(f *os.File, size int64) (lines [][]byte, partial bool, err error) {
	for window := int64(64 << 10); ; window *= 2 {
		off := max(0, size-window)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		partial = buf[len(buf)-1] != '\n'
		lines = bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n"))
		if off > 0 {
			lines = lines[1:] // the first is cut by the window
		}
		if off == 0 || len(lines) >= 3 {
			return lines, partial, nil
		}
	}
}

// findChain is the chain identity the log names: the last record of the
// tail that names one, or else the first record from the file's start that
// does (a log upgraded from version 1 names its chain first at the
// chain-start the upgrade wrote, which may lie deep in the file).
func findChain(f *os.File, tail [][]byte) string {
	for i := len(tail) - 1; i >= 0; i-- {
		if e, err := ParseLineKey(tail[i], nil); err == nil && e.Chain != "" {
			return e.Chain
		}
	}
	sc := bufio.NewScanner(io.NewSectionReader(f, 0, 1<<62))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if e, err := ParseLineKey(sc.Bytes(), nil); err == nil && e.Chain != "" {
			return e.Chain
		}
	}
	return ""
}

// lastRecordLine is the last of the complete lines that has a record's
// shape, or nil.
func lastRecordLine(lines [][]byte, partial bool) []byte {
	if partial {
		lines = lines[:len(lines)-1]
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if _, err := ParseLineKey(lines[i], nil); err == nil {
			return lines[i]
		}
	}
	return nil
}

// lastSeq is the largest sequence number among lines that have a record's
// shape, whatever their HMAC: a chain that cannot continue from its last
// line still never uses a sequence number twice.
func lastSeq(lines [][]byte) uint64 {
	var seq uint64
	for _, line := range lines {
		if e, err := ParseLineKey(line, nil); err == nil {
			seq = max(seq, e.Seq)
		}
	}
	return seq
}

// Write writes rec and returns once it is in the sink, or ErrUnavailable
// when the sink fails or does not answer within the timeout. A record that
// timed out may still be written later. While the file system is below
// MinFreeBytes a call record, and a denial (or denials summary), is refused
// at once, with an error that is also ErrLowSpace; other records (results
// of calls already recorded, checkpoints, the close) are written while the
// disk has room. Denials are refused too because unauthenticated clients
// decide how many there are: from many addresses they could fill the space
// kept for the rest.
func (l *Log) Write(ctx context.Context, rec Record) error {
	if (rec.Kind == KindCall || rec.Kind == KindDenial || rec.Kind == KindDenials) && l.health.has(problemLowSpace) {
		l.stats.lowSpace.Add(1)
		return errLowSpaceRefusal
	}
	if rec.Kind == KindCall && l.health.has(problemWitnesses) {
		return errNoQuorum
	}
	timer := time.NewTimer(l.cfg.Timeout)
	defer timer.Stop()
	reply := make(chan error, 1)
	select {
	case l.reqs <- request{rec: rec, reply: reply}:
	case <-l.done:
		return ErrClosed
	case <-timer.C:
		l.timedOut()
		return fmt.Errorf("%w: the sink did not accept a record within %s", ErrUnavailable, l.cfg.Timeout)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
	select {
	case err := <-reply:
		return err
	case <-timer.C:
		l.timedOut()
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
	var pruneTick <-chan time.Time
	if l.cfg.MaxAge > 0 {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		pruneTick = t.C
		l.prune()
	}
	for {
		select {
		case r := <-l.reqs:
			err := l.write(r.rec)
			r.reply <- err
			// Whatever held the loop is over; a write that failed said so.
			l.health.clear(problemTimeout)
			if err == nil && l.sinceCheckpoint >= l.cfg.CheckpointEvery {
				l.checkpoint()
			}
			if l.rotated {
				l.rotated = false
				l.prune()
			}
		case <-pruneTick:
			l.prune()
		case <-tick.C:
			l.tick()
		case <-l.quit:
			l.lastWriteErr = l.finish()
			return
		}
	}
}

// finish writes the close record and its checkpoint, syncs and closes the
// files; the error is the first that happened.
func (l *Log) finish() error {
	err := l.write(Record{Kind: KindClose})
	if err == nil {
		// The close record is witnessed too, so that a clean shutdown
		// is proven complete to its last record.
		err = l.checkpoint()
	}
	for _, step := range []func() error{l.sink.Sync, l.syncTree, l.closeFiles} {
		if serr := step(); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// tick is the loop's work every SyncInterval: a checkpoint when one is
// due, the interval fsync, the free space, and a try of a sink whose last
// write failed.
func (l *Log) tick() {
	// The loop has time for its ticker, so nothing holds it now.
	l.health.clear(problemTimeout)
	l.checkSpace()
	if l.writeFailed {
		// With the sink failing, /readyz sends no calls here, so nothing
		// would write to find it well again: write the chain-start that the
		// next record owes anyway, now. It is no record of nothing: it
		// says that a write failed, and where.
		_ = l.startAfterFailedWrite()
	}
	if l.cfg.Signer != nil && l.sinceCheckpoint > 0 && l.cfg.Now().Sub(l.lastCheckpoint) >= l.cfg.CheckpointInterval {
		l.checkpoint()
	}
	l.checkQuorum()
	if l.syncFailed.Swap(false) {
		// Linux may drop the pages a failed fsync could not write
		// and report the next fsync clean: retrying is not enough.
		// The next record says so (see write).
		l.dirty, l.syncLost = true, true
	}
	// An fsync that neither returns nor fails (a hung network disk) held
	// no record up and raised nothing: past the timeout
	// it is a problem of its own, until it returns.
	if l.syncing.Load() {
		if started := time.Unix(0, l.syncStarted.Load()); time.Since(started) > l.cfg.Timeout {
			l.health.raise(problemHungSync, fmt.Sprintf("an fsync of the audit log has not returned for %s: records may not reach the disk", time.Since(started).Round(time.Second)))
		}
	}
	if l.dirty && !l.syncing.Load() {
		// fsync can take milliseconds (tens on a busy disk); done
		// here, it would hold up every record behind it. The
		// syncing goroutine is one at a time; a failed sync marks
		// the log dirty again for the next tick.
		l.dirty = false
		l.syncing.Store(true)
		l.syncStarted.Store(time.Now().UnixNano())
		go func(s sink, tree *merkle.Tree) {
			defer l.syncing.Store(false)
			defer l.health.clear(problemHungSync)
			err := s.Sync()
			if err == nil && tree != nil {
				err = tree.Sync()
			}
			if err != nil {
				l.syncFailure(err)
				l.syncFailed.Store(true)
				return
			}
			l.health.clear(problemSync)
		}(l.sink, l.tree)
	}
}

// startAfterFailedWrite ends the line a failed write tore, if it tore one,
// and writes the chain-start that says a write failed: what must come
// before any other record after a failed write.
func (l *Log) startAfterFailedWrite() error {
	if l.torn {
		n, err := l.sink.Write([]byte("\n"))
		l.size += int64(n)
		l.wrote(n)
		if err != nil {
			l.writeFailure(err)
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		l.torn = false
	}
	return l.write(Record{Kind: KindChainStart, Reason: fmt.Sprintf("a write to the audit sink failed after seq %d", l.seq)})
}

// write encodes and writes one record; called only by the loop (or by Open
// before the loop starts).
func (l *Log) write(rec Record) error {
	if rec.Kind != KindChainStart {
		if err := l.sayWhatWasLost(); err != nil {
			return err
		}
	}
	switch rec.Kind {
	case KindChainStart, KindAnchor:
		rec.Tree = l.treeEdge()
		rec.Chain = l.chain
	case KindCheckpoint, KindPruned:
		rec.Chain = l.chain
	}
	line, err := l.encodeRotating(&rec)
	if err != nil {
		return err
	}
	n, err := l.sink.Write(line)
	l.size += int64(n)
	l.wrote(n)
	if err != nil {
		l.writeFailed, l.torn = true, l.torn || n > 0
		l.writeFailure(err)
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	l.writeFailed = false
	l.health.clear(problemWrite)
	l.seq++
	digest := lineDigest(line)
	l.prev = hex.EncodeToString(digest[:])
	l.appendToTree(digest)
	if rec.Kind != KindCheckpoint {
		l.sinceCheckpoint++
	}
	return l.syncAfterWrite()
}

// sayWhatWasLost writes, before a record, the chain-start that says the
// last write failed (and may have left a torn line), or that an fsync
// failed and records before it may not be on disk.
func (l *Log) sayWhatWasLost() error {
	if l.writeFailed {
		if err := l.startAfterFailedWrite(); err != nil {
			return err
		}
	}
	if l.syncLost {
		l.syncLost = false
		if err := l.write(Record{Kind: KindChainStart, Reason: fmt.Sprintf("an fsync of the audit sink failed after seq %d: records before it may not be on disk", l.seq)}); err != nil {
			return err
		}
	}
	return nil
}

// encodeRotating is rec's line, written into a new file first when it
// would take the current one past MaxBytes.
func (l *Log) encodeRotating(rec *Record) ([]byte, error) {
	line := l.encode(rec)
	if !l.rotatable || l.cfg.MaxBytes <= 0 || l.size <= 0 || l.size+int64(len(line)) <= l.cfg.MaxBytes || rec.Kind == KindAnchor {
		return line, nil
	}
	if err := l.rotate(); err != nil {
		// A failed write like any other: the ticker tries again (see
		// tick), and the next record says that one was refused.
		l.writeFailed = true
		l.writeFailure(fmt.Errorf("rotating: %w", err))
		return nil, fmt.Errorf("%w: rotating: %v", ErrUnavailable, err)
	}
	if rec.Kind == KindChainStart {
		// The rotation wrote an anchor (and perhaps a chain-start) first:
		// the tree this record follows grew.
		rec.Tree = l.treeEdge()
	}
	return l.encode(rec), nil
}

// syncAfterWrite syncs the sink after each record with FsyncAlways, and
// otherwise marks it to be synced on the interval.
func (l *Log) syncAfterWrite() error {
	if l.cfg.Fsync != FsyncAlways || l.tree != nil {
		// The tree is synced on the interval whatever the log's fsync.
		l.dirty = true
	}
	if l.cfg.Fsync != FsyncAlways {
		return nil
	}
	if err := l.sink.Sync(); err != nil {
		// As after a failed interval sync: the next record says the
		// records before it may not be on disk, and the ticker tries
		// again, which ends the problem without calls.
		l.syncFailure(err)
		l.dirty, l.syncLost = true, true
		return fmt.Errorf("%w: syncing: %v", ErrUnavailable, err)
	}
	l.health.clear(problemSync)
	return nil
}

func (l *Log) encode(rec *Record) []byte {
	b := append(l.body[:0], `{"time":"`...)
	b = l.cfg.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = strconv.AppendUint(append(b, `","seq":`...), l.seq+1, 10)
	b = appendString(append(b, `,"prev":`...), l.prev)
	b = strconv.AppendInt(append(b, `,"v":`...), SchemaVersion, 10)
	b = appendString(append(b, `,"kid":`...), l.kid)
	b = append(rec.appendFields(b), '}')
	l.body = b
	return seal(l.mac, b)
}

// checkpoint signs a checkpoint of the last record and writes it: into the
// log, to the witness file, and to OnCheckpoint. Without a signer it does
// nothing. The error is the log's own write's; a witness that cannot be
// written is reported to OnCheckpoint (the log's checkpoint still stands,
// but a tail cut after it can no longer be proven).
func (l *Log) checkpoint() error {
	if l.cfg.Signer == nil || l.seq == 0 {
		return nil
	}
	// A chain-start owed for a failed write or fsync goes before the
	// checkpoint is made, so that the checkpoint (and its tree's note)
	// names the record just before its own.
	if err := l.sayWhatWasLost(); err != nil {
		return err
	}
	now := l.cfg.Now()
	cp := Checkpoint{Chain: l.chain, Seq: l.seq, Hash: l.prev, Time: now.UTC(), Note: l.treeNote()}
	cp.sign(l.cfg.Signer)
	l.sinceCheckpoint, l.lastCheckpoint = 0, now
	if err := l.write(Record{Kind: KindCheckpoint, Checkpoint: &cp}); err != nil {
		return err
	}
	var werr error
	if l.witness != nil {
		werr = l.witnessWrite(cp)
	}
	if errors.Is(werr, errUnsynced) {
		// Security: a note leaves the process only once the records it
		// names are on disk. One of records a power loss then took would
		// be signed again, of other records, at the restart: a fork.
		cp.Note = ""
	}
	if werr == nil && cp.Note != "" && l.sender != nil {
		l.sender.Send([]byte(cp.Note), int64(cp.Seq), now)
	}
	if l.cfg.OnCheckpoint != nil {
		l.cfg.OnCheckpoint(cp, werr)
	}
	return nil
}

// errUnsynced is a checkpoint file write refused because the log or its
// tree could not be synced first.
var errUnsynced = errors.New("not synced")

// witnessWrite appends cp to the witness file, once the records it names
// are on stable storage: a witness ahead of its log would, after a power
// loss, make the restart claim records missing that were never lost.
func (l *Log) witnessWrite(cp Checkpoint) error {
	if err := l.sink.Sync(); err != nil {
		return fmt.Errorf("%w: syncing the audit log before its checkpoint: %v", errUnsynced, err)
	}
	if err := l.syncTree(); err != nil {
		return fmt.Errorf("%w: syncing the audit tree before its checkpoint: %v", errUnsynced, err)
	}
	line := cp.MarshalLine()
	if l.witnessTorn {
		// The last write may have left part of a line: end it first.
		line = append([]byte("\n"), line...)
	}
	_, err := l.witness.Write(line)
	if err == nil {
		err = l.witness.Sync()
	}
	l.witnessTorn = err != nil
	if err != nil {
		l.stats.witnessFailures.Add(1)
	}
	return err
}

// rotate renames the current file aside and starts a new one with an anchor
// record that links to the old file's last record.
func (l *Log) rotate() error {
	// Every step can fail (a full disk, no descriptors left) and is undone
	// when a later one does, so that the log keeps writing to the file it
	// had and the next record tries the rotation again. (The file used to
	// be closed first: a rename or create that failed left the log writing
	// to a closed file until a restart.)
	f := l.sink.(*os.File)
	if err := f.Sync(); err != nil {
		return err
	}
	path := f.Name()
	aside := path + "." + l.cfg.Now().UTC().Format(rotatedAtLayout)
	if err := os.Rename(path, aside); err != nil {
		return err
	}
	nf, err := openLocked(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL)
	if err != nil {
		if uerr := os.Rename(aside, path); uerr != nil {
			return fmt.Errorf("%w; and putting the log back failed: %v", err, uerr)
		}
		return err
	}
	_ = f.Close() // its lock goes with it; the new file holds its own
	l.sink, l.size, l.dirty, l.rotated = nf, 0, false, true
	return l.write(Record{Kind: KindAnchor, PreviousFile: filepath.Base(aside), PreviousLastSeq: l.seq})
}
