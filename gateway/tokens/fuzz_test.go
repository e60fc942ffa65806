package tokens

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzParseAgreesWithThePortholeBeforeExpiries holds Parse to the parser
// it extends: for any file, the porthole before expiries accepts it, with
// no digest on two lines, exactly when Parse does and no principal has an
// expiry, and then both read the
// same principals under the same digests (a rollback keeps what it can
// read, and refuses the rest). And every line Parse accepts is the line its
// writer would write for what it read, but for spacing and the digest's
// case: an expiry is read back as it was written, and only so.
func FuzzParseAgreesWithThePortholeBeforeExpiries(f *testing.F) {
	d := Digest("a")
	for _, seed := range []string{
		"alice " + d + "\n",
		"alice " + d + " expires=2027-03-01T00:00:00Z\n",
		"# c\n\n  alice\t" + strings.ToUpper(d) + "  \nbob " + Digest("b") + " expires=2001-01-01T00:00:00Z",
		"alice " + d + " expires=0001-01-01T00:00:00Z\n",
		"alice " + d + " expires=2027-03-01T00:00:00.5Z\n",
		"alice " + d + " extra\n",
		"local " + d + "\n",
		"a " + d + "\nb " + d + "\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, file string) {
		set, err := Parse(strings.NewReader(file))
		oldNames, oldDigests, oldErr := parseBeforeExpiries(strings.NewReader(file))
		expiring := set != nil && slices.ContainsFunc(set.entries, func(e Entry) bool { return !e.Expires.IsZero() })
		// The porthole before expiries also read a file that holds one
		// digest on two lines, giving the token to the later principal;
		// Parse refuses it.
		oldOneDigestEach := oldErr == nil && len(oldDigests) == len(oldNames)
		if oldOneDigestEach != (err == nil && !expiring) {
			t.Fatalf("before expiries: %v; now: %v with expiries %v", oldErr, err, expiring)
		}
		if oldOneDigestEach {
			names := make([]string, 0, len(set.entries))
			for _, e := range set.entries {
				names = append(names, e.Name)
			}
			now := map[[sha256.Size]byte]string{}
			for digest, e := range set.byDigest {
				now[digest] = e.Name
			}
			if !slices.Equal(names, oldNames) || !maps.Equal(now, oldDigests) {
				t.Fatalf("before expiries read %v %v; now %v %v", oldNames, oldDigests, names, now)
			}
		}
		if err != nil {
			return
		}
		for line := range strings.Lines(file) {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			e, digest, err := parseLine(line)
			if err != nil {
				t.Fatalf("Parse accepted the file but not its line %q: %v", line, err)
			}
			written := strings.Fields(formatLine(e.Name, hex.EncodeToString(digest[:]), e.Expires))
			read := strings.Fields(line)
			read[1] = strings.ToLower(read[1])
			if !slices.Equal(written, read) {
				t.Fatalf("the line %q is written back as %q", line, written)
			}
		}
	})
}
