package tokens

import (
	"bytes"
	"context"
	"crypto/sha256"
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
type Store struct {
	path string
	log  *zap.Logger
	cur  atomic.Pointer[Set]

	mu  sync.Mutex
	sum [sha256.Size]byte
}

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
		return nil, [sha256.Size]byte{}, fmt.Errorf("%w: %v", ErrFile, err)
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
	if sum == s.sum && err == nil {
		return false, nil
	}
	if err != nil {
		s.log.Error("tokens file not reloaded; the previous tokens stay in force", zap.Error(err))
		return false, err
	}
	s.cur.Store(t)
	s.sum = sum
	s.log.Info("tokens file reloaded", zap.Int("principals", t.Len()))
	return true, nil
}

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
		}
	}
}
