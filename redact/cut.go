package redact

import "unicode/utf8"

// CutWindow is how far past a cut a text is read for redaction: longer
// than any secret a detector finds whole (a PEM private key, a JWT), so
// that a secret that begins before the cut is redacted whole, while a text
// of megabytes is never redacted in full to keep its first few hundred
// bytes. redact/quote reads as far past its caps; it may not import this
// package, so a test of its holds the two equal.
const CutWindow = 16 << 10

// PartialMarker stands for the start of a secret that a cut left behind.
const PartialMarker = "[REDACTED:partial]"

// Cut redacts s and cuts the result at n bytes, without splitting a UTF-8
// sequence. It returns what is kept, how many secrets it replaced in what
// it read, and whether it cut.
//
// Security: a cut can end inside a secret, and half a secret is nothing a
// redactor recognises later. So the redaction comes first, over a window of
// s that reaches past the cut (n plus CutWindow, doubled until, redacted,
// it is longer than n, or is all of s: markers are often shorter than what
// they replace). And where what is kept ends in the start of a secret the
// cut made unrecognisable (TrailingPartial), that start is replaced by
// PartialMarker, counted as one redaction, with the result still within n
// bytes; when n is shorter than the marker, the start is dropped without
// it. What lies past the window is never read: a secret there is neither
// redacted nor counted, and cannot change what is kept. (Where markers
// shortened the window so much that, redacted, it only just reaches past
// the cut, a secret its end cut through is not redacted whole, and what of
// it is kept goes only where TrailingPartial finds it.)
//
// A nil Redactor is one that knows no exact secret, as in String.
func (r *Redactor) Cut(s string, n int) (out string, redactions int, cut bool) {
	n = max(n, 0)
	red, redactions := r.window(s, n)
	if len(red) <= n {
		return red, redactions, false
	}
	kept, dropped := r.withoutPartial(red[:runeCut(red, n)], n)
	if !dropped {
		return kept, redactions, true
	}
	redactions++
	if n < len(PartialMarker) {
		return kept, redactions, true
	}
	kept, _ = r.withoutPartial(kept, n-len(PartialMarker))
	return kept + PartialMarker, redactions, true
}

// window redacts as much of s as a cut at n needs: a window that, redacted,
// is longer than n, or all of s.
func (r *Redactor) window(s string, n int) (string, int) {
	w := len(s)
	if n < len(s)-CutWindow {
		w = n + CutWindow
	}
	for {
		red, count := r.String(s[:w])
		if len(red) > n || w == len(s) {
			return red, count
		}
		w = min(len(s), 2*w)
	}
}

// withoutPartial cuts s to at most room bytes and takes off the start of a
// secret it ends in, again and again: taking one off (or cutting to make
// room for the marker) can leave another exposed, as when the start of an
// exact secret with a hyphen in it follows a token's start that the hyphen
// had stopped. dropped says it took one off.
func (r *Redactor) withoutPartial(s string, room int) (kept string, dropped bool) {
	for {
		s = s[:runeCut(s, room)]
		i := r.TrailingPartial(s)
		if i == len(s) {
			return s, dropped
		}
		s, dropped = s[:i], true
	}
}

// runeCut is where to cut s so that it holds at most n bytes and no part of
// a UTF-8 sequence: n, or the start of the sequence that s[n] continues.
// Where s is not valid UTF-8 (a continuation byte with no start within
// reach) it is n.
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}
