package redact

import (
	"regexp/syntax"
	"strings"
)

// A detector's matches often cannot hold some white space: a token holds
// none, a Bearer credential no line break. Such a detector's matches lie
// within the segments of the text between those bytes, so its regexp
// need only read the segments where a start or a hint of it lies, instead
// of running along the text from there to the next match (which, for
// matches a few kilobytes apart, was the whole text at the regexp's
// pace). White space is no word character, so a \b at a segment's edge
// reads the same in the segment as in the text.

// whiteSpace are the bytes \s matches, which segments are cut at.
const whiteSpace = "\t\n\f\r "

// segmentBytes are the white-space bytes no match of re can hold, as a
// table, or nil when there are none or when re names the start or end of
// the text or of a line (which a segment would move).
func segmentBytes(re string) *[256]bool {
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil || anchorsToText(parsed) {
		return nil
	}
	var seps [256]bool
	any := false
	for _, c := range []byte(whiteSpace) {
		if !canMatch(parsed, rune(c)) {
			seps[c], any = true, true
		}
	}
	if !any {
		return nil
	}
	return &seps
}

// anchorsToText reports whether re holds ^, $, \A or \z in any form.
func anchorsToText(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	}
	for _, sub := range re.Sub {
		if anchorsToText(sub) {
			return true
		}
	}
	return false
}

// canMatch reports whether some match of re may hold the character c, a
// white-space character (which folds to no other).
func canMatch(re *syntax.Regexp, c rune) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == c {
				return true
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= c && c <= re.Rune[i+1] {
				return true
			}
		}
	case syntax.OpAnyChar:
		return true
	case syntax.OpAnyCharNotNL:
		return c != '\n'
	}
	for _, sub := range re.Sub {
		if canMatch(sub, c) {
			return true
		}
	}
	return false
}

// segmentEnd is where the segment that holds s[i] ends.
func segmentEnd(s string, i int, seps *[256]bool) int {
	for i < len(s) && !seps[s[i]] {
		i++
	}
	return i
}

// segmentStart is where the segment that holds s[i] begins.
func segmentStart(s string, i int, seps *[256]bool) int {
	for i > 0 && !seps[s[i-1]] {
		i--
	}
	return i
}

// replaceInSegments is d.re.ReplaceAllStringFunc(s, f) for a detector
// with hints and no starts whose matches lie within segments: each
// segment that holds a hint is read, in order, and no other.
func (d *detector) replaceInSegments(s string, f func(string) string) string {
	sp := splice{s: s}
	var hints hintCursor
	hints.reset(d, s)
	for from := 0; from < len(s); {
		p := hints.next(from)
		if p < 0 {
			break
		}
		a, e := segmentStart(s, p, d.seps), segmentEnd(s, p, d.seps)
		if out := d.re.ReplaceAllStringFunc(s[a:e], f); out != s[a:e] {
			sp.replace(a, e, out)
		}
		from = e + 1
	}
	return sp.String()
}

// hintCursor finds, left to right, where a detector's hints occur in s.
// Each hint's next place is kept and searched for again only once the
// cursor has passed it: a hint that never occurs costs one search of the
// text, not one for each place another hint occurs.
type hintCursor struct {
	d *detector
	s string
	// at holds, per hint, its first place at or after the last search,
	// -1 for none, -2 before any search; many is it for a detector with
	// more hints than at has room for.
	at   [4]int
	many []int
}

func (c *hintCursor) reset(d *detector, s string) {
	c.d, c.s = d, s
	if n := len(d.hintTexts()); n > len(c.at) {
		c.many = make([]int, n)
	}
	for i := range c.at {
		c.at[i] = -2
	}
	for i := range c.many {
		c.many[i] = -2
	}
}

// place is hint i's entry.
func (c *hintCursor) place(i int) *int {
	if c.many != nil {
		return &c.many[i]
	}
	return &c.at[i]
}

// next is where the first of the hints at or after from begins, or -1;
// from never decreases from one call to the next.
func (c *hintCursor) next(from int) int {
	best := -1
	for i, h := range c.d.hintTexts() {
		at := c.place(i)
		p := *at
		if p == -1 {
			continue
		}
		if p < from {
			var k int
			if c.d.fold {
				k = indexFold(c.s[from:], h)
			} else {
				k = strings.Index(c.s[from:], h)
			}
			if k < 0 {
				*at = -1
				continue
			}
			p = from + k
			*at = p
		}
		if best < 0 || p < best {
			best = p
		}
	}
	return best
}

// replaceInWindows is d.re.ReplaceAllStringFunc(s, f) for a detector
// whose matches may hold white space but lie within d.window of a hint:
// for each hint, in order, the leftmost match in its window that holds
// it, and no reading elsewhere.
func (d *detector) replaceInWindows(s string, f func(string) string) string {
	sp := splice{s: s}
	var hints hintCursor
	hints.reset(d, s)
	for from := 0; from < len(s); {
		p := hints.next(from)
		if p < 0 {
			break
		}
		lo, hi := d.window(s, p)
		lo = max(lo, sp.last)
		loc := d.re.FindStringIndex(s[lo:hi])
		// A match that begins past p holds a later hint, whose window
		// finds it; and only a match that holds p is sure to end before
		// hi, where a \b reads the text that follows as the text has it.
		if loc == nil || lo+loc[0] > p {
			from = p + 1
			continue
		}
		sp.replace(lo+loc[0], lo+loc[1], f(s[lo+loc[0]:lo+loc[1]]))
		from = sp.last
	}
	return sp.String()
}

func isSpace(c byte) bool { return strings.IndexByte(whiteSpace, c) >= 0 }

// secretKeyWindow bounds the matches of the aws-secret-access-key
// detector that hold its hint ("ecret") at p: they begin at most 7 bytes
// before it ("aws_", and an s that (?i) may read as the 2-byte long s),
// and hold, after it, at most 16 bytes of "_access_key" and a quote (the
// Kelvin sign and the long s read as k and s), white space, ":" or "=",
// white space, a quote and 40 characters of up to 3 bytes each (the
// Kelvin sign is one of them under (?i)); 4 bytes more let the final \b
// read the character that follows.
func secretKeyWindow(s string, p int) (lo, hi int) {
	i := p + len("ecret")
	for k := 0; k < 16 && i < len(s) && !isSpace(s[i]) && s[i] != ':' && s[i] != '='; k++ {
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	i++ // ":" or "="
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return max(0, p-7), min(len(s), i+1+3*40+4)
}
