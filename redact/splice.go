package redact

import "strings"

// splice is a text with some of its spans replaced, each found left to
// right after the last: nothing is copied until the first replacement,
// and a text with none is returned as it is.
type splice struct {
	s       string
	b       strings.Builder
	last    int // where the text not yet written begins
	changed bool
}

// replace writes the text up to lo, then with in place of s[lo:hi].
func (sp *splice) replace(lo, hi int, with string) {
	if !sp.changed {
		sp.b.Grow(len(sp.s))
		sp.changed = true
	}
	sp.b.WriteString(sp.s[sp.last:lo])
	sp.b.WriteString(with)
	sp.last = hi
}

// String is the text with its replacements.
func (sp *splice) String() string {
	if !sp.changed {
		return sp.s
	}
	sp.b.WriteString(sp.s[sp.last:])
	return sp.b.String()
}
