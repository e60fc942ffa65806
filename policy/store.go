package policy

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// FileStore holds the policy file (PORTHOLE_POLICY_FILE) in force and reads
// it again when asked, as the tokens file is: a file that does not parse
// keeps the last grants it gave in force, so that a half-written edit
// neither locks everyone out nor lets anyone in.
//
// Security: a file that is gone or cannot be read grants nothing to anyone
// until it can be read again. Falling back to "no policy file" would grant
// every tool to every principal, and keeping the last grants would let a
// revoked grant outlive its file.
type FileStore struct {
	path  string
	extra []string

	cur     atomic.Pointer[policyInForce]
	problem atomic.Pointer[string] // nil when the policy in force is the file's

	mu  sync.Mutex
	sum [sha256.Size]byte
}

type policyInForce struct {
	grants     *Grants
	attributes []string
	merges     []string // File.Merges
	// pseudonymising says a profile of the file pseudonymises.
	pseudonymising bool
}

func inForce(f *File) *policyInForce {
	p := &policyInForce{grants: f.Grants(), attributes: slices.Clone(f.QueryAttributes), merges: f.Merges()}
	for name := range f.Profiles {
		p.pseudonymising = p.pseudonymising || f.pseudonymises(name)
	}
	return p
}

// Pseudonymising reports whether a profile of the file in force
// pseudonymises.
func (s *FileStore) Pseudonymising() bool { return s.cur.Load().pseudonymising }

// The problems a reload can leave, as Problem says them.
const (
	ProblemPolicyUnreadable  = "the policy file cannot be read, so no principal may call any tool"
	ProblemPolicyUnparseable = "the policy file is not valid, so the grants in force are the last it gave (none, if it could not be read before)"
)

// grantsNothing is the policy of a file that cannot be read: every
// principal is unnamed, and an unnamed principal has no tool.
var grantsNothing = &policyInForce{grants: (&File{Principals: map[string]Grant{}}).Grants(), attributes: []string{}}

// OpenFileStore reads the policy file at path; extra names the upstream
// tools it may grant. Unlike a reload, a first read that fails is an error,
// so porthole does not start on a broken file.
func OpenFileStore(path string, extra ...string) (*FileStore, error) {
	s := &FileStore{path: path, extra: slices.Clone(extra)}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the policy file: %w", err)
	}
	f, err := ParseFile(b, extra...)
	if err != nil {
		return nil, err
	}
	s.cur.Store(inForce(f))
	s.sum = sha256.Sum256(b)
	return s, nil
}

// Grants are the grants in force.
func (s *FileStore) Grants() *Grants { return s.cur.Load().grants }

// QueryAttributes are the custom attributes the file in force allows.
func (s *FileStore) QueryAttributes() []string { return s.cur.Load().attributes }

// Merges says, of the file in force, what a caller matched by grants of
// different disclosure profiles gets (File.Merges).
func (s *FileStore) Merges() []string { return s.cur.Load().merges }

// Problem is why the policy in force is not the file's, or "" when it is.
func (s *FileStore) Problem() string {
	if p := s.problem.Load(); p != nil {
		return *p
	}
	return ""
}

// errPolicyUnreadable marks a policy file that could not be read at all.
var errPolicyUnreadable = errors.New("the policy file cannot be read")

// Reload reads the file again. It reports whether the policy in force
// changed; an error says why the file's was not taken.
func (s *FileStore) Reload() (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.path)
	if err != nil {
		changed = s.Problem() != ProblemPolicyUnreadable
		s.cur.Store(grantsNothing)
		s.sum = [sha256.Size]byte{}
		s.setProblem(ProblemPolicyUnreadable)
		return changed, fmt.Errorf("%w: %v", errPolicyUnreadable, err)
	}
	sum := sha256.Sum256(b)
	if sum == s.sum && s.Problem() == "" {
		return false, nil
	}
	f, err := ParseFile(bytes.Clone(b), s.extra...)
	if err != nil {
		s.sum = sum
		s.setProblem(ProblemPolicyUnparseable)
		return false, err
	}
	s.cur.Store(inForce(f))
	s.sum = sum
	s.problem.Store(nil)
	return true, nil
}

func (s *FileStore) setProblem(p string) { s.problem.Store(&p) }
