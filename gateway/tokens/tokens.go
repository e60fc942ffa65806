package tokens

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Set is the set of principals and the SHA-256 digests of their tokens.
//
// The tokens file holds one principal per line: its name, whitespace, and the
// lowercase hex SHA-256 of its token. Blank lines and lines starting with #
// are ignored. Names are unique. The file holds no token itself, so reading
// it does not let anyone call porthole.
//
//	# porthole tokens: name and sha256 of the token
//	alice 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
type Set struct {
	names    []string
	byDigest map[[sha256.Size]byte]string
}

// principalName is what a principal may be called: it appears in logs and
// audit records, so it is short and plain.
var principalName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// tokenPrefix marks porthole tokens so secret scanners can recognise them.
const tokenPrefix = "ph_"

// ErrFile wraps every refusal of a tokens file.
var ErrFile = errors.New("tokens file refused")

// Parse reads a tokens file. A malformed line refuses the whole file,
// naming the line.
func Parse(r io.Reader) (*Set, error) {
	t := &Set{byDigest: map[[sha256.Size]byte]string{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d: want a name and a sha256 digest", ErrFile, n)
		}
		name, digest := fields[0], fields[1]
		if !principalName.MatchString(name) {
			return nil, fmt.Errorf("%w: line %d: a principal name is 1 to 64 letters, digits, '.', '_', '@' or '-'", ErrFile, n)
		}
		if reserved(name) {
			return nil, fmt.Errorf("%w: line %d: the principal name %q is reserved (porthole's callers over stdio and without authentication); choose another", ErrFile, n, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: line %d: the principal %s appears twice", ErrFile, n, name)
		}
		seen[name] = true
		raw, err := hex.DecodeString(digest)
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("%w: line %d: the digest is not 64 hex digits of a sha256", ErrFile, n)
		}
		t.names = append(t.names, name)
		t.byDigest[[sha256.Size]byte(raw)] = name
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	return t, nil
}

// Load reads the tokens file at path.
func Load(path string) (*Set, error) {
	t, _, err := readFile(path)
	return t, err
}

// Len is the number of principals.
func (t *Set) Len() int {
	if t == nil {
		return 0
	}
	return len(t.names)
}

// Lookup returns the principal whose token this is: the token's SHA-256
// digest, looked up in a map, at the same cost whatever the number of
// principals.
//
// Security: the lookup's timing can depend on the digest it is given, and
// on the digests held, but never on a token: an attacker who learns how a
// guessed digest compares with a held one learns nothing about a token
// whose digest that is, since SHA-256 has no known way back from a digest
// (or a prefix of one) to a preimage. The tokens themselves are 256 random
// bits, which no guessing at network speed reaches.
func (t *Set) Lookup(token string) (string, bool) {
	if t == nil {
		return "", false
	}
	name, ok := t.byDigest[sha256.Sum256([]byte(token))]
	return name, ok
}

// New makes a token with 256 bits of randomness.
func New() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Reserved are the principal names porthole gives callers no token names:
// "local" over stdio, "anonymous" over HTTP without authentication. A token
// of either name would make its holder indistinguishable from them in
// grants and in the audit log, so no tokens file may name one, in any case.
var Reserved = []string{"local", "anonymous"}

func reserved(name string) bool {
	return slices.ContainsFunc(Reserved, func(r string) bool { return strings.EqualFold(r, name) })
}

// Digest is the hex SHA-256 of a token, as the tokens file holds it.
func Digest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// Append makes a token for name, appends its digest to the tokens file
// at path (created with mode 0600 if missing), and returns the token. The
// file is read first so that a duplicate name or a malformed file is refused
// before anything is written.
func Append(path, name string) (string, error) {
	if !principalName.MatchString(name) {
		return "", fmt.Errorf("%w: the name %q is not 1 to 64 letters, digits, '.', '_', '@' or '-'", ErrFile, name)
	}
	if reserved(name) {
		return "", fmt.Errorf("%w: the principal name %q is reserved (porthole's callers over stdio and without authentication); choose another", ErrFile, name)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrFile, err)
	}
	defer f.Close()
	existing, err := Parse(f)
	if err != nil {
		return "", err
	}
	for _, n := range existing.names {
		if n == name {
			return "", fmt.Errorf("%w: the principal %s already has a token; remove its line to replace it", ErrFile, name)
		}
	}
	token, err := New()
	if err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(f, "%s %s\n", name, Digest(token)); err != nil {
		return "", fmt.Errorf("%w: writing: %v", ErrFile, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("%w: syncing: %v", ErrFile, err)
	}
	return token, nil
}
