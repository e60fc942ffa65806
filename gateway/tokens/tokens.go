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
	"time"
)

// Set is the set of principals, the SHA-256 digests of their tokens, and
// when each token expires.
//
// The tokens file holds one principal per line: its name, whitespace, the
// lowercase hex SHA-256 of its token, and optionally whitespace and
// "expires=" with a time in RFC 3339, in UTC, to the second. A token is
// refused from its expiry on; a line without one never expires. Blank lines
// and lines starting with # are ignored. Names are unique. The file holds
// no token itself, so reading it does not let anyone call porthole.
//
//	# porthole tokens: name, sha256 of the token, and optionally its expiry
//	alice    9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	ci-agent 3b5d5c3712955042212316173ccf37be8000b7e6b8c5d9e2c4e4a5b1f0b6a7d2 expires=2027-03-01T00:00:00Z
//
// Why an expiry is a third field: every porthole before expiries wants
// exactly two fields on a line, so it refuses a file with an expiry (it
// does not start; a reload keeps the tokens it had) rather than reading the
// line without its expiry and admitting the token for ever. The "expires="
// says what the time means to someone reading the file.
type Set struct {
	entries  []Entry // in the file's order
	byDigest map[[sha256.Size]byte]Entry
}

// Entry is one principal of a tokens file and when its token expires; the
// zero Expires is never.
type Entry struct {
	Name    string
	Expires time.Time
}

// Expired reports whether the token is refused at now: from its expiry on.
func (e Entry) Expired(now time.Time) bool {
	return !e.Expires.IsZero() && !now.Before(e.Expires)
}

// principalName is what a principal may be called: it appears in logs and
// audit records, so it is short and plain.
var principalName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Prefix marks porthole tokens so secret scanners can recognise them.
const Prefix = "ph_"

const tokenPrefix = Prefix

// expiryField starts the optional third field of a line, and expiryLayout
// is the one way its time is written: RFC 3339 in UTC, to the second.
const (
	expiryField  = "expires="
	expiryLayout = "2006-01-02T15:04:05Z"
)

// ErrFile wraps every refusal of a tokens file.
var ErrFile = errors.New("tokens file refused")

// The reasons Lookup refuses a token. They are porthole's sentences for the
// audit record; a client is told neither, since the gateway answers every
// refusal with the same 401.
var (
	ErrUnknownToken = errors.New("a bearer token that matches no principal")
	ErrExpiredToken = errors.New("an expired bearer token")
)

// Parse reads a tokens file. A malformed line refuses the whole file,
// naming the line.
func Parse(r io.Reader) (*Set, error) {
	t := &Set{byDigest: map[[sha256.Size]byte]Entry{}}
	seen := map[string]bool{}
	lineOf := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, digest, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFile, n, err)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("%w: line %d: the principal %s appears twice", ErrFile, n, e.Name)
		}
		seen[e.Name] = true
		// One token names one principal: with the same digest on two
		// lines, the later line's principal would be the one its holder
		// is logged and granted as, whoever the operator meant.
		if first, ok := lineOf[digest]; ok {
			return nil, fmt.Errorf("%w: lines %d and %d hold the same token digest (principals %s and %s); a token names one principal", ErrFile, first, n, t.byDigest[digest].Name, e.Name)
		}
		lineOf[digest] = n
		t.entries = append(t.entries, e)
		t.byDigest[digest] = e
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	return t, nil
}

// parseLine reads one line that is neither blank nor a comment.
func parseLine(line string) (Entry, [sha256.Size]byte, error) {
	var e Entry
	fields := strings.Fields(line)
	if len(fields) != 2 && len(fields) != 3 {
		return e, [sha256.Size]byte{}, errors.New("want a name, a sha256 digest, and optionally expires=<time>")
	}
	e.Name = fields[0]
	if !principalName.MatchString(e.Name) {
		return e, [sha256.Size]byte{}, errors.New("a principal name is 1 to 64 letters, digits, '.', '_', '@' or '-'")
	}
	if reserved(e.Name) {
		return e, [sha256.Size]byte{}, fmt.Errorf("the principal name %q is reserved (porthole's callers over stdio and without authentication); choose another", e.Name)
	}
	raw, err := hex.DecodeString(fields[1])
	if err != nil || len(raw) != sha256.Size {
		return e, [sha256.Size]byte{}, errors.New("the digest is not 64 hex digits of a sha256")
	}
	if len(fields) == 3 {
		if e.Expires, err = parseExpiry(fields[2]); err != nil {
			return e, [sha256.Size]byte{}, err
		}
	}
	return e, [sha256.Size]byte(raw), nil
}

// parseExpiry reads "expires=<time>". Only the spelling porthole writes is
// taken (time.Parse alone would also take fractional seconds), so that the
// time a reader sees is the time enforced, and a file in UTC throughout
// sorts and compares by eye.
func parseExpiry(field string) (time.Time, error) {
	v, ok := strings.CutPrefix(field, expiryField)
	if !ok {
		return time.Time{}, errors.New("a third field must be expires=<time>")
	}
	at, err := time.Parse(expiryLayout, v)
	switch {
	case err != nil || at.Format(expiryLayout) != v:
		return time.Time{}, errors.New("the expiry is not a time in RFC 3339, in UTC, to the second, such as expires=2027-03-01T00:00:00Z")
	case at.IsZero():
		// Go's zero time is how an Entry says "never": read as a time it
		// would turn an expiry in year 1 into none.
		return time.Time{}, errors.New("the expiry 0001-01-01T00:00:00Z is not a date porthole can hold; write a real one")
	}
	return at, nil
}

// formatLine is a line of the tokens file, as Append writes it and Parse
// reads it.
func formatLine(name, digest string, expires time.Time) string {
	if expires.IsZero() {
		return name + " " + digest + "\n"
	}
	return name + " " + digest + " " + expiryField + expires.UTC().Format(expiryLayout) + "\n"
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
	return len(t.entries)
}

// Entries are the principals and their expiries, sorted by name.
func (t *Set) Entries() []Entry {
	if t == nil {
		return nil
	}
	out := slices.Clone(t.entries)
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the principal whose token this is, if the token has not
// expired at now: the token's SHA-256 digest, looked up in a map, at the
// same cost whatever the number of principals. Otherwise it returns no name
// and ErrUnknownToken, or an error wrapping ErrExpiredToken that names the
// principal and the expiry, for the audit record.
//
// Security: the lookup's timing can depend on the digest it is given, and
// on the digests held, but never on a token: an attacker who learns how a
// guessed digest compares with a held one learns nothing about a token
// whose digest that is, since SHA-256 has no known way back from a digest
// (or a prefix of one) to a preimage. The tokens themselves are 256 random
// bits, which no guessing at network speed reaches. The expiry is compared
// only after a digest was found, so it tells a guesser nothing new: only
// the holder of a token learns that it expired, and the gateway does not
// tell even them.
func (t *Set) Lookup(token string, now time.Time) (string, error) {
	if t == nil {
		return "", ErrUnknownToken
	}
	e, ok := t.byDigest[sha256.Sum256([]byte(token))]
	switch {
	case !ok:
		return "", ErrUnknownToken
	case e.Expired(now):
		return "", fmt.Errorf("%w (principal %s, expired %s)", ErrExpiredToken, e.Name, e.Expires.Format(expiryLayout))
	}
	return e.Name, nil
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

// Append makes a token for name that never expires, appends its digest to
// the tokens file at path (created with mode 0600 if missing), and returns
// the token. The file is read first so that a duplicate name or a malformed
// file is refused before anything is written.
func Append(path, name string) (string, error) {
	return AppendExpiring(path, name, time.Time{})
}

// AppendExpiring is Append for a token refused from expires on (cut to the
// second; the zero time is never). An expiry the file cannot hold (a year
// past 9999) is refused before anything is written.
func AppendExpiring(path, name string, expires time.Time) (string, error) {
	if !principalName.MatchString(name) {
		return "", fmt.Errorf("%w: the name %q is not 1 to 64 letters, digits, '.', '_', '@' or '-'", ErrFile, name)
	}
	if reserved(name) {
		return "", fmt.Errorf("%w: the principal name %q is reserved (porthole's callers over stdio and without authentication); choose another", ErrFile, name)
	}
	if !expires.IsZero() {
		if _, err := parseExpiry(expiryField + expires.UTC().Format(expiryLayout)); err != nil {
			return "", fmt.Errorf("%w: the expiry %s cannot be written: %v", ErrFile, expires.UTC().Format(time.RFC3339), err)
		}
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
	for _, e := range existing.entries {
		if e.Name == name {
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
	if _, err := io.WriteString(f, formatLine(name, Digest(token), expires)); err != nil {
		return "", fmt.Errorf("%w: writing: %v", ErrFile, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("%w: syncing: %v", ErrFile, err)
	}
	return token, nil
}
