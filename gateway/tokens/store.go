package tokens

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Store holds the current tokens and reloads them from their file when
// it changes, or when asked (SIGHUP), without a restart. A revoked token
// stops working at the next reload. A file that does not parse keeps the
// previous set in force, and the reason is logged: a half-written edit must
// not lock everyone out, nor let anyone in.
//
// Security: a file that is gone or cannot be read refuses every token until
// it can be read again. Deleting the file is how an operator may revoke
// every token at once; had the last set stayed in force, a revoked token
// would outlive its file.
type Store struct {
	path    string
	log     *zap.Logger
	cur     atomic.Pointer[Set]
	problem atomic.Pointer[string] // nil when the set in force is the file's

	mu  sync.Mutex
	sum [sha256.Size]byte

	toldMu sync.Mutex
	told   map[string]time.Time // principal to when its coming expiry was last told
}

// The problems a reload can leave, as Problem says them.
const (
	ProblemUnreadable  = "the tokens file cannot be read, so every static token is refused"
	ProblemUnparseable = "the tokens file does not parse, so the tokens in force are the last it gave (none, if it could not be read before)"
)

// Problem is why the tokens in force are not the file's, or "" when they
// are.
func (s *Store) Problem() string {
	if p := s.problem.Load(); p != nil {
		return *p
	}
	return ""
}

// errUnreadable marks a tokens file that could not be read at all.
type errUnreadable struct{ error }

func (e errUnreadable) Unwrap() error { return e.error }

// OpenStore loads path; unlike a reload, a first load that fails is an
// error, so porthole does not start on a broken file.
func OpenStore(path string, log *zap.Logger) (*Store, error) {
	s := &Store{path: path, log: log}
	t, sum, err := readFile(path)
	if err != nil {
		return nil, err
	}
	s.cur.Store(t)
	s.sum = sum
	return s, nil
}

// readFile reads and parses the tokens file at path, and says what its
// bytes were (their digest), so a reload can skip a file that did not
// change.
func readFile(path string) (*Set, [sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, [sha256.Size]byte{}, errUnreadable{fmt.Errorf("%w: %v", ErrFile, err)}
	}
	sum := sha256.Sum256(b)
	t, err := Parse(bytes.NewReader(b))
	return t, sum, err
}

// Current is the token set in force.
func (s *Store) Current() *Set { return s.cur.Load() }

// Reload reads the file again. It reports whether the set changed.
func (s *Store) Reload() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, sum, err := readFile(s.path)
	var unreadable errUnreadable
	switch {
	case errors.As(err, &unreadable):
		changed := s.Problem() != ProblemUnreadable
		if changed {
			s.log.Error(ProblemUnreadable, zap.Error(err))
		}
		s.cur.Store(&Set{byDigest: map[[sha256.Size]byte]Entry{}})
		s.sum = [sha256.Size]byte{}
		s.setProblem(ProblemUnreadable)
		return changed, err
	case err != nil:
		if sum != s.sum {
			s.log.Error(ProblemUnparseable, zap.Error(err))
			s.sum = sum
		}
		s.setProblem(ProblemUnparseable)
		return false, err
	case sum == s.sum && s.Problem() == "":
		return false, nil
	}
	s.cur.Store(t)
	s.sum = sum
	s.problem.Store(nil)
	s.log.Info("tokens file reloaded", zap.Int("principals", t.Len()))
	return true, nil
}

func (s *Store) setProblem(p string) { s.problem.Store(&p) }

// Watch reloads the file every interval until ctx ends. Polling the content
// (not the modification time) catches every change, including an editor's
// rename-over and a change within the same second.
func (s *Store) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.Reload()
			s.TellExpiring(time.Now())
		}
	}
}

// Expiring is how soon before its expiry a token is told of, each day,
// and counted (ExpiringWithin).
const Expiring = 14 * 24 * time.Hour

// TellExpiring logs, at most once a day for each principal, a token that
// expires within Expiring of now: replacing a token is the operator's to
// do before its holder is refused.
func (s *Store) TellExpiring(now time.Time) {
	s.toldMu.Lock()
	defer s.toldMu.Unlock()
	if s.told == nil {
		s.told = map[string]time.Time{}
	}
	for _, e := range s.Current().Entries() {
		if e.Expires.IsZero() || e.Expired(now) || e.Expires.Sub(now) > Expiring {
			continue
		}
		if last, ok := s.told[e.Name]; ok && now.Sub(last) < 24*time.Hour {
			continue
		}
		s.told[e.Name] = now
		s.log.Warn("a token expires soon: make its holder a new one", zap.String("principal", e.Name),
			zap.Time("expires", e.Expires), zap.Duration("in", e.Expires.Sub(now).Round(time.Hour)))
	}
}

// ExpiringWithin counts the tokens of the set in force that have not
// expired at now and expire within d of it.
func (s *Store) ExpiringWithin(now time.Time, d time.Duration) int {
	n := 0
	for _, e := range s.Current().Entries() {
		if !e.Expires.IsZero() && !e.Expired(now) && e.Expires.Sub(now) <= d {
			n++
		}
	}
	return n
}
