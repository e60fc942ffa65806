// Package quote carries text that somebody else wrote (and that porthole
// passes on) in a shape that says so, and makes identifiers from Temporal
// safe to show.
//
// # Trust model
//
// Every string that came out of Temporal, or out of an upstream MCP server,
// was written by somebody porthole does not trust: a workflow author, a
// worker, an operator who typed a schedule note. Such a string reaches a
// client in one of three shapes only:
//
//   - an identifier (workflow id, run id, type names, task queue, activity id,
//     schedule id): a plain string, cut at [MaxIdentifierLen] bytes, with every
//     control or invisible character written as a visible escape, so it cannot
//     forge line structure or hide text from a human reader
//     ([Quoter.EscapeIdentifier]);
//   - free text (failure messages, worker identities, schedule notes): a
//     [Text] value that names its origin, cleaned the same way and cut at
//     [MaxQuotedLen] bytes with a visible marker ([Quoter.Of],
//     [Quoter.OfUpTo]);
//   - a JSON value (an upstream tool's structured content): a [JSON] value
//     that names its origin, every string in it cleaned the same way, and no
//     object in it claiming porthole's origins ([OfJSON]).
//
// Sentences porthole writes itself carry [OriginPorthole] ([Says]). A client
// shows a quoted [Text] or [JSON] as evidence and never lifts it into
// instructions.
//
// Cleaning never fails: malformed UTF-8 becomes U+FFFD, and what cannot be
// shown safely is escaped rather than dropped, so the reader can see that
// something was there. Only [OfJSON] refuses: what is not one JSON value,
// and a value past its cap once cleaned, since a JSON value cut is not JSON.
//
// Quoting is not redaction: secrets in quoted text are removed by package
// redact, on the rendered result and again where bytes leave the process.
// But a [Quoter] holds the redactor, and redacts a value before it cuts or
// escapes it, so that no cut leaves half a secret behind and no escape
// hides a token's word boundary.
//
// EscapeIdentifier makes an identifier safe to show; it does not check that
// an argument is a valid identifier, which is policy.CheckIdentifier's job.
package quote

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Origin says who wrote a piece of text.
type Origin string

const (
	// OriginPorthole marks sentences porthole writes itself.
	OriginPorthole Origin = "porthole"
	// OriginTemporal marks words that came out of Temporal: failure messages,
	// worker identities, schedule notes. Somebody else wrote them.
	OriginTemporal Origin = "porthole-quoting-temporal"
)

// OriginUpstream marks words that came from the upstream MCP server of that
// roster name: its tools' results. Somebody else wrote them.
func OriginUpstream(name string) Origin { return Origin("porthole-quoting-upstream:" + name) }

// Length caps, in bytes of cleaned output. They bound what one field can cost
// a client's model and what an attacker who controls a field can smuggle.
const (
	MaxIdentifierLen = 256
	MaxQuotedLen     = 1024
)

// truncationMarker ends a value that was cut. It is plain ASCII so that it
// survives every later encoding unchanged.
const truncationMarker = "…[truncated by porthole]"

// CutOff is t's text without the marker a cut left at its end, and
// whether there was one: the text as it was before it was cut, up to the
// cut.
func (t Text) CutOff() (head string, cut bool) {
	return strings.CutSuffix(t.Text, truncationMarker)
}

// WithHead is t with head in place of its text before the marker a cut
// left (t.CutOff's head), the marker kept.
func (t Text) WithHead(head string) Text {
	if _, cut := t.CutOff(); cut {
		head += truncationMarker
	}
	return Text{Text: head, Origin: t.Origin}
}

// Text is free text together with who wrote it. It is the only type that
// carries free text in porthole's results, besides the strings of a [JSON]
// value.
type Text struct {
	Text   string `json:"text" jsonschema:"the words, cleaned of control and invisible characters and length-capped"`
	Origin Origin `json:"origin" jsonschema:"who wrote the words: porthole, porthole-quoting-temporal for text taken from Temporal, or porthole-quoting-upstream:NAME for text from an upstream MCP server"`
}

// Redactor removes secrets from a string and says how many it replaced;
// *redact.Redactor is one.
type Redactor interface {
	String(s string) (string, int)
}

// Quoter quotes and escapes text written by somebody else. It holds the
// redactor that knows porthole's secrets.
//
// Security: a value cut at its cap can end inside a secret, and half a
// secret is nothing a redactor that reads the answer later recognises. So a
// value that would be cut is redacted first (a window of it that reaches
// past the cut), then cleaned and cut, and the start of a secret the cut
// left behind is replaced too. A value that is escaped is redacted first
// too, since an escape (\u200B) ends in a word character that hides the
// word boundary a detector needs before a token. A value that fits and
// needs no escape is left to the redaction every answer passes through.
type Quoter struct {
	redactor Redactor
}

// New is a Quoter that redacts with r before it cuts. A nil r redacts
// nothing: for tests, and for text that holds no secret.
func New(r Redactor) Quoter { return Quoter{redactor: r} }

// Of wraps text written by somebody else, cleaned and capped at
// MaxQuotedLen.
func (q Quoter) Of(origin Origin, s string) Text {
	return Text{Text: q.clean(s, MaxQuotedLen, true), Origin: origin}
}

// OfUpTo is Of with a cap of max bytes instead of MaxQuotedLen: an
// upstream tool's result is longer than a failure message, and its roster
// entry sets the cap.
func (q Quoter) OfUpTo(origin Origin, s string, max int) Text {
	return Text{Text: q.clean(s, max, true), Origin: origin}
}

// EscapeIdentifier returns an identifier somebody else wrote (taken from
// Temporal, or a name a client sent), safe to show: control and invisible
// characters are escaped and the length is capped.
func (q Quoter) EscapeIdentifier(s string) string {
	return q.clean(s, MaxIdentifierLen, false)
}

// Says wraps a sentence porthole writes itself.
func Says(s string) Text {
	return Text{Text: s, Origin: OriginPorthole}
}

// PartialRedactor is a Redactor that can also say where, at the end of a
// text, a secret may begin that the text holds only part of;
// *redact.Redactor is one.
type PartialRedactor interface {
	Redactor
	TrailingPartial(s string) int
}

// redactWindow is how far past a cap a value is read for redaction: longer
// than any secret a detector finds whole (a PEM private key, a JWT), so that
// a secret that begins before the cap is redacted whole, while a value of
// megabytes is never redacted in full to show its first kilobyte. It is
// redact.CutWindow, which this package may not import (a test holds them
// equal), and so is PartialMarker redact.PartialMarker.
const redactWindow = 16 << 10

// PartialMarker stands for the start of a secret (or of a value a
// disclosure profile shows as its pseudonym) a cut left behind.
const PartialMarker = "[REDACTED:partial]"

func (q Quoter) clean(s string, limit int, keepLines bool) string {
	out, cut, _ := clean(s, limit, keepLines)
	// A value that fits and needed no escape is left to the redaction at
	// the wire. One that was escaped is redacted first, as one that is
	// cut is: an escape written before a token (\u200B, \u0000) ends in a
	// word character, and a detector that needs a word boundary before
	// its token no longer finds it at the wire.
	if !cut && len(out) == len(s) || q.redactor == nil {
		return out
	}
	// Redaction shortens what it replaces, so a window that ended before
	// the cut once redacted is read again, twice as long, up to the whole.
	var redacted string
	var consumed int
	for window := limit + redactWindow; ; window *= 2 {
		w := s[:min(len(s), window)]
		redacted, _ = q.redactor.String(w)
		out, cut, consumed = clean(redacted, limit, keepLines)
		if cut || len(w) == len(s) {
			break
		}
	}
	if !cut {
		return out
	}
	// What is left before the cut may still end in the first part of a
	// secret whose rest the cut took: that part goes too. It is found in
	// the text as written (where a tab is a tab, not an escape), and what
	// comes before it is cleaned again, leaving room for the marker.
	p, ok := q.redactor.(PartialRedactor)
	if !ok {
		return out
	}
	kept := redacted[:consumed]
	i := p.TrailingPartial(kept)
	if i == len(kept) {
		return out
	}
	if limit < len(PartialMarker) {
		return strings.TrimSuffix(withoutPartial(p, kept[:i], limit, keepLines), truncationMarker) + truncationMarker
	}
	head := withoutPartial(p, kept[:i], limit-len(PartialMarker), keepLines)
	return strings.TrimSuffix(head, truncationMarker) + PartialMarker + truncationMarker
}

// withoutPartial cleans s and cuts it at room bytes, and takes off the
// start of a secret the cut leaves, again and again: cutting to make room
// for the marker can leave another start exposed.
func withoutPartial(p PartialRedactor, s string, room int, keepLines bool) string {
	for {
		head, cut, consumed := clean(s, room, keepLines)
		if !cut {
			return head
		}
		i := p.TrailingPartial(s[:consumed])
		if i == consumed {
			return head
		}
		s = s[:i]
	}
}

// clean escapes what can hide instructions or forge structure (C0 and C1
// controls, ANSI escape sequences, bidi controls, zero-width and other format
// characters), replaces malformed UTF-8 and cuts the result at max bytes.
// cut says it was cut.
//
// consumed is how many bytes of s the output holds, up to the cut.
func clean(s string, max int, keepLines bool) (out string, cut bool, consumed int) {
	if len(s) <= max && keptRun(s, 0, keepLines) == len(s) {
		// Nothing to escape, nothing to cut: s as it is, not a copy.
		return s, false, len(s)
	}
	var b strings.Builder
	if max > 0 {
		b.Grow(min(len(s), max))
	}
	for i, w := 0, 0; i < len(s); i += w {
		// A run of characters kept as they are (printable ASCII, and tabs
		// and newlines in quoted text) is copied whole: an upstream's
		// answer of many lines is mostly such runs, and each of their
		// bytes went through the rune-by-rune checks below. It is
		// cut where the loop below would cut it, at the first byte that
		// passes max. FuzzCleanIsTheRuneByRuneClean holds the two alike.
		if j := keptRun(s, i, keepLines); j > i {
			if room := max - b.Len(); j-i > room {
				if room < 0 {
					room = 0
				}
				b.WriteString(s[i : i+room])
				b.WriteString(truncationMarker)
				return b.String(), true, i + room
			}
			b.WriteString(s[i:j])
			w = j - i
			continue
		}
		var piece string
		piece, w = escapeRune(s, i, keepLines)
		if b.Len()+len(piece) > max {
			b.WriteString(truncationMarker)
			return b.String(), true, i
		}
		b.WriteString(piece)
	}
	return b.String(), false, len(s)
}

// escapeRune is what clean writes for the character at s[i], and its
// length in s: malformed UTF-8 replaced, hidden characters escaped, the
// rest as it is.
func escapeRune(s string, i int, keepLines bool) (piece string, size int) {
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return "\uFFFD", size
	case r == '\t' || r == '\n':
		// Kept in quoted text (keepLines): a failure message or an
		// upstream's answer may be several lines, and quoting makes them
		// harmless. Escaped in identifiers. The caller says which, not
		// the cap: a quote cut at 256 bytes is still text.
		if keepLines {
			return string(r), size
		}
		return fmt.Sprintf("\\u%04X", r), size
	case isHidden(r) && r > 0xFFFF:
		// Eight hex digits after \U: with \u and five, a tag character
		// U+E0049 would read as U+E004 followed by the letter "9".
		return fmt.Sprintf("\\U%08X", r), size
	case isHidden(r):
		return fmt.Sprintf("\\u%04X", r), size
	}
	return s[i : i+size], size
}

// keptRun is the end of the run of bytes from i that clean keeps as they
// are one by one: printable ASCII, and tabs and newlines when keepLines.
func keptRun(s string, i int, keepLines bool) int {
	for ; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 || c >= 0x7f) && !(keepLines && (c == '\t' || c == '\n')) {
			break
		}
	}
	return i
}

// isHidden reports whether r is a character a reader cannot see or that
// changes how the text around it is shown: C0 and C1 controls (ESC starts an
// ANSI sequence, so escaping it defuses the sequence), DEL, format characters
// (zero-width joiners, bidi embeddings, overrides and isolates, the BOM), and
// the line and paragraph separators that some JSON and log readers treat as
// newlines.
func isHidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == '\u2028', r == '\u2029':
		return true
	case unicode.Is(unicode.Cf, r):
		return true
	case unicode.Is(unicode.Variation_Selector, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		// Invisible but not format characters: the combining grapheme
		// joiner U+034F, variation selectors, the Hangul fillers U+3164
		// and U+FFA0. "port\u034fhole" shows as porthole.
		return true
	}
	return false
}
