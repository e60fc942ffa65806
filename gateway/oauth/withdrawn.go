package oauth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Withdrawals ends OAuth access before the tokens' exp. A JWT is checked
// against its issuer's key alone, so once issued it would be good until
// its exp whatever happened since; the withdrawals file is where the
// operator ends it sooner, one line per principal:
//
//	# principal          what is withdrawn
//	oauth:corp:alice     2026-12-06T05:00:00Z   every token issued before
//	oauth:corp:bob       jti:8f14e45f           the one token with this jti
//
// A token of a principal with a time is refused unless its iat is at or
// after that time (a token without iat is refused); a token whose jti is
// listed for its principal is refused. The file is read at start and then
// polled; a line takes effect at the next poll, for tokens held as well as
// new ones. A file that does not parse leaves the last good list in force
// and is logged; a file that cannot be read refuses every OAuth token
// until it can, since who is withdrawn is then unknown (ErrWithdrawalsUnknown,
// which the front answers with 503, not as a failed authentication).
type Withdrawals struct {
	path string
	log  *zap.Logger
	mu   sync.Mutex // serialises Reload, and guards good and sum
	sum  [sha256.Size]byte
	good *withdrawn // the last list that parsed
	cur  atomic.Pointer[withdrawn]
}

// ErrWithdrawalsUnknown is Validate's answer for a valid token while the
// withdrawals file cannot be read: whether it is withdrawn is unknown.
var ErrWithdrawalsUnknown = errors.New("porthole cannot read the OAuth withdrawals file, so it accepts no OAuth token now")

// withdrawn is one reading of the file; unreadable refuses everyone.
type withdrawn struct {
	before     map[string]time.Time
	jtis       map[string]bool // principal + "\x00" + jti
	unreadable error
}

// OpenWithdrawals reads path; an error is the first reading's, which
// porthole refuses to start with.
func OpenWithdrawals(path string, log *zap.Logger) (*Withdrawals, error) {
	w := &Withdrawals{path: path, log: log}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the OAuth withdrawals file: %w", err)
	}
	list, err := parseWithdrawals(b)
	if err != nil {
		return nil, fmt.Errorf("the OAuth withdrawals file %s: %w", path, err)
	}
	w.sum, w.good = sha256.Sum256(b), list
	w.cur.Store(list)
	return w, nil
}

// Reload reads the file again, and reports whether the list changed.
func (w *Withdrawals) Reload() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := os.ReadFile(w.path)
	if err != nil {
		if w.cur.Load().unreadable == nil {
			w.log.Error("the OAuth withdrawals file cannot be read: every OAuth token is refused until it can", zap.Error(err))
		}
		w.cur.Store(&withdrawn{unreadable: err})
		w.sum = [sha256.Size]byte{}
		return true, err
	}
	sum := sha256.Sum256(b)
	if sum == w.sum {
		return false, nil
	}
	w.sum = sum
	list, err := parseWithdrawals(b)
	if err != nil {
		w.log.Error("the OAuth withdrawals file does not parse: the last good list stays in force", zap.Error(err))
		w.cur.Store(w.good)
		return false, err
	}
	w.good = list
	w.cur.Store(list)
	w.log.Info("OAuth withdrawals file reloaded", zap.Int("principals cut off", len(list.before)), zap.Int("tokens", len(list.jtis)))
	return true, nil
}

// Watch reloads the file every interval until ctx ends.
func (w *Withdrawals) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = w.Reload()
		}
	}
}

// check refuses id if it is withdrawn (ErrInvalidToken), or if the file
// cannot be read (ErrWithdrawalsUnknown); a list never read counts as
// unreadable.
func (w *Withdrawals) check(id *Identity) error {
	list := w.cur.Load()
	if list == nil || list.unreadable != nil {
		return ErrWithdrawalsUnknown
	}
	if id.TokenID != "" && list.jtis[id.Principal+"\x00"+id.TokenID] {
		return fmt.Errorf("%w: it was withdrawn (its jti is listed in the withdrawals file)", ErrInvalidToken)
	}
	if cut, ok := list.before[id.Principal]; ok && (id.IssuedAt.IsZero() || id.IssuedAt.Before(cut)) {
		return fmt.Errorf("%w: its principal's tokens issued before %s were withdrawn", ErrInvalidToken, cut.UTC().Format(time.RFC3339))
	}
	return nil
}

// parseWithdrawals reads the file's lines: "# ..." and blank lines are
// skipped; every other line is a principal and an RFC 3339 time or
// "jti:<id>".
func parseWithdrawals(b []byte) (*withdrawn, error) {
	list := &withdrawn{before: map[string]time.Time{}, jtis: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[0], "oauth:") {
			return nil, fmt.Errorf("line %d: want an OAuth principal (oauth:<issuer alias>:<name>) and a time or jti:<id>", n)
		}
		if jti, ok := strings.CutPrefix(f[1], "jti:"); ok {
			if jti == "" {
				return nil, fmt.Errorf("line %d: jti: names no token", n)
			}
			list.jtis[f[0]+"\x00"+jti] = true
			continue
		}
		t, err := time.Parse(time.RFC3339, f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is neither an RFC 3339 time (2026-12-06T05:00:00Z) nor jti:<id>", n, f[1])
		}
		if prev, ok := list.before[f[0]]; ok && prev.After(t) {
			t = prev
		}
		list.before[f[0]] = t
	}
	if err := sc.Err(); err != nil {
		return nil, errors.New("a line is too long")
	}
	return list, nil
}
