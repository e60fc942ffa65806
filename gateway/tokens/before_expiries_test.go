package tokens

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// parseBeforeExpiries is Parse as every porthole before expiries has it
// (main at eacaef8, unchanged in substance since the first commit), copied
// here and frozen: the CHANGELOG tells operators that an older porthole
// refuses a tokens file with expiries, and the tests hold the lines this
// porthole writes to that. Do not update it when Parse changes. (It shares
// principalName and reserved with Parse, which have not changed.)
func parseBeforeExpiries(r io.Reader) (names []string, byDigest map[[sha256.Size]byte]string, err error) {
	byDigest = map[[sha256.Size]byte]string{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, nil, fmt.Errorf("%w: line %d: want a name and a sha256 digest", ErrFile, n)
		}
		name, digest := fields[0], fields[1]
		if !principalName.MatchString(name) {
			return nil, nil, fmt.Errorf("%w: line %d: a principal name is 1 to 64 letters, digits, '.', '_', '@' or '-'", ErrFile, n)
		}
		if reserved(name) {
			return nil, nil, fmt.Errorf("%w: line %d: the principal name %q is reserved (porthole's callers over stdio and without authentication); choose another", ErrFile, n, name)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("%w: line %d: the principal %s appears twice", ErrFile, n, name)
		}
		seen[name] = true
		raw, err := hex.DecodeString(digest)
		if err != nil || len(raw) != sha256.Size {
			return nil, nil, fmt.Errorf("%w: line %d: the digest is not 64 hex digits of a sha256", ErrFile, n)
		}
		names = append(names, name)
		byDigest[[sha256.Size]byte(raw)] = name
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	return names, byDigest, nil
}
