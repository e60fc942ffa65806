package redact

import (
	"slices"

	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A Redactor removes secrets from text on its way out of the process: the
// exact secrets porthole knows (the Temporal API key, client key material,
// the audit key, values an operator lists) and strings shaped like
// credentials (JWTs, Bearer tokens, cloud and forge tokens, PEM private keys,
// URLs with a password). Each replacement names its kind, as
// [REDACTED:jwt], so a reader knows something was there and what.
//
// On JSON it works string literal by string literal: each literal is decoded
// (so \u0041 and \/ escapes hide nothing), redacted, and written back as a
// valid literal in the same place. Nothing else is touched, so the output is
// valid JSON whenever the input was, with keys and values in the same order.
// A literal whose text is itself JSON (an MCP text content holding the
// result) is redacted the same way, recursively.
//
// Redacting twice gives what redacting once gave: no replacement matches a
// detector. A Redactor is safe for concurrent use.
type Redactor struct {
	exact []string // longest first, so a secret that contains another wins
	// probes stand for the exact secrets a document may hold only
	// escaped: those with a character JSON writes as an escape (a quote,
	// a backslash, a control character) or may write as a \u escape (one
	// beyond ASCII). Each is the secret's longest run of printable ASCII
	// other than a quote and a backslash, which every JSON writing of the
	// secret holds as it is, or with a \u escape of an ASCII character or
	// a \/ in it, which the fast path takes as a reason to look closer
	// anyway. A document holding a probe goes down the slow path, which
	// decodes each literal. (A PEM key's probe is one of its lines.)
	probes []string
	// nonASCIIExact and escapedExact are set for an exact secret too
	// short in such runs to have a probe: the first makes any \u escape
	// a reason to look closer, the second any backslash at all.
	nonASCIIExact bool
	escapedExact  bool
	// pairs are hintPairs and the first two bytes of every exact secret
	// and probe, which byFirst holds by their first byte: the fast path
	// looks for hints and secrets in one pass. Nil when there are none.
	pairs   *[256][4]uint64
	byFirst *[256][]string
	// covers is the set of pairs holdsHint looks for at every other
	// position: nil when there are no exact secrets (hintCovers serves).
	covers *pairSet
	// personal are the personal-data detectors switched on (WithPersonal);
	// cards says the card detector is among them.
	personal []personalDetector
	cards    bool
	// personalFirst are the bytes any of personal's anchors is.
	personalFirst *[256]bool
}

// MinExactSecretLen is the shortest exact secret accepted: shorter ones would
// redact ordinary words.
const MinExactSecretLen = 8

// New returns a Redactor for the given exact secrets. Secrets shorter than
// MinExactSecretLen are left out and returned, so the caller can warn.
func New(secrets ...string) (*Redactor, []string) {
	r := &Redactor{}
	var tooShort []string
	r.exact, tooShort = exactForms(secrets)
	sortLongestFirst(r.exact)
	r.planProbes()
	r.indexSecrets()
	return r, tooShort
}

// exactForms are the strings looked for exactly: each secret long enough,
// its encodings, and each long line of a secret spread over lines (a PEM
// key), so a fragment quoted alone is caught; tooShort are the secrets
// too short to look for.
func exactForms(secrets []string) (exact, tooShort []string) {
	seen := map[string]bool{}
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			exact = append(exact, v)
		}
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		switch {
		case s == "" || seen[s]:
			continue
		case len(s) < MinExactSecretLen:
			tooShort = append(tooShort, s)
			continue
		}
		add(s)
		for _, v := range encodings(s) {
			add(v)
		}
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				add(line)
			}
		}
	}
	return exact, tooShort
}

// planProbes picks, for each exact secret, how it is found: by its
// longest run of plain bytes where that is long enough, else by noting
// that some secret holds bytes a JSON string escapes or that are not
// ASCII.
func (r *Redactor) planProbes() {
	for _, s := range r.exact {
		run, plain := longestPlainRun(s)
		switch {
		case plain:
		case len(run) >= MinExactSecretLen:
			r.probes = append(r.probes, run)
		default:
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] >= 0x7f {
					r.nonASCIIExact = true
				}
				if s[i] < 0x20 || s[i] == '"' || s[i] == '\\' {
					r.escapedExact = true
				}
			}
		}
	}
}

// indexSecrets makes pairs and byFirst from the exact secrets and probes.
func (r *Redactor) indexSecrets() {
	if len(r.exact)+len(r.probes) == 0 {
		return
	}
	pairs, byFirst, covers := hintPairs, [256][]string{}, hintCovers
	for _, e := range append(slices.Clone(r.exact), r.probes...) {
		pairs[e[0]][e[1]>>6] |= 1 << (e[1] & 63)
		byFirst[e[0]] = append(byFirst[e[0]], e)
		covers.add(e[0], e[1])
		covers.add(e[1], e[2]) // an exact secret and a probe have eight bytes or more
	}
	r.pairs, r.byFirst, r.covers = &pairs, &byFirst, &covers
}

// pairSet is a set of pairs of bytes.
type pairSet [1024]uint64

func (s *pairSet) add(a, b byte) {
	p := uint(a)<<8 | uint(b)
	s[p>>6] |= 1 << (p & 63)
}

func (s *pairSet) has(a, b byte) bool {
	p := uint(a)<<8 | uint(b)
	return s[p>>6]&(1<<(p&63)) != 0
}

// longestPlainRun is s's longest run of printable ASCII other than a quote
// and a backslash: what JSON writes as it is. plain says s is all such.
func longestPlainRun(s string) (run string, plain bool) {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' {
			continue
		}
		if i-start > len(run) {
			run = s[start:i]
		}
		start = i + 1
	}
	return run, len(run) == len(s)
}

func sortLongestFirst(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && len(s[j]) > len(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// detector finds one kind of secret-shaped string.
type detector struct {
	kind string
	// hints are texts one of which every match holds (in any ASCII case
	// when fold is set): the cheap test before the regexp runs, and what
	// the fast path looks for (hintsByFirstByte is made from them).
	// A detector with starts and no hints has its starts for hints (see
	// hintTexts).
	hints []string
	re    *regexp.Regexp
	// group is the submatch that is the secret; 0 for the whole match.
	group int
	// accept, when set, must approve a match: it keeps a detector whose
	// shape is loose from redacting ordinary words.
	accept func(secret string) bool
	// starts, when set, are the texts every match of re begins with (in
	// any ASCII case when fold is set, as are the hints; after a \b when
	// wordStart is set).
	// Such a detector runs its regexp only from where one of them
	// occurs, to the end of the segment it lies in (seps), instead of
	// along the whole text: the same matches, at a fraction of the cost
	// (FuzzDetectorsMatchOnlyAtTheirStarts).
	starts    []string
	fold      bool
	wordStart bool
	first     [256]bool // the first bytes of starts, made at init
	// seps are the white-space bytes no match holds (segmentBytes), made
	// at init; nil when the regexp must read the text whole, or, where
	// window is set, the windows it returns around each hint.
	seps   *[256]bool
	window func(s string, hint int) (lo, hi int)
}

// hintTexts are the detector's hints: its own, or its starts, which every
// match holds too.
func (d *detector) hintTexts() []string {
	if d.hints != nil {
		return d.hints
	}
	return d.starts
}

// indexFold is strings.Index ignoring ASCII case, without allocating, for
// a sub of lowercase ASCII letters. (strings.EqualFold on a window of
// len(sub) bytes folds only ASCII here: a window with a wider rune in it has
// fewer runes than sub.)
func indexFold(s, sub string) int {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if s[i]|0x20 == sub[0] && asciiEqualFold(s[i:i+n], sub) {
			return i
		}
	}
	return -1
}

func init() {
	for i := range detectors {
		detectors[i].seps = segmentBytes(detectors[i].re.String())
		if d := &detectors[i]; d.starts != nil {
			for _, st := range d.starts {
				d.first[st[0]] = true
				if d.fold {
					d.first[st[0]&^0x20] = true
				}
			}
		}
	}
}

// replaceAll is d.re.ReplaceAllStringFunc(s, f).
func (d *detector) replaceAll(s string, f func(string) string) string {
	switch {
	case d.starts == nil && d.seps != nil:
		return d.replaceInSegments(s, f)
	case d.starts == nil && d.window != nil:
		return d.replaceInWindows(s, f)
	case d.starts == nil:
		return d.re.ReplaceAllStringFunc(s, f)
	}
	return d.replaceFromStarts(s, f)
}

// replaceFromStarts is replaceAll for a detector with starts.
func (d *detector) replaceFromStarts(s string, f func(string) string) string {
	// Leftmost first, without overlaps, as ReplaceAllStringFunc: every
	// match begins at a start, so no match begins before the first start
	// from i, and the leftmost match from there is the regexp's leftmost
	// match in s[i:]. \b before a start (whose first byte is a word
	// character) needs a byte before it that is not one, which the slice
	// s[i:] cannot show the regexp: it is checked here. One search runs to
	// the next match or the end, never once per start: a run of starts
	// (eyJeyJeyJ…) that matches nowhere cost a search to its end for each
	// of them, quadratic in the run (84 s for 80 KiB).
	sp := splice{s: s}
	for i := 0; i < len(s); i++ {
		if !d.first[s[i]] || !d.startsAt(s, i) || d.wordStart && i > 0 && isWordByte(s[i-1]) {
			continue
		}
		end := len(s)
		if d.seps != nil {
			// No match holds a separator: none that begins in this
			// segment reads past its end.
			end = segmentEnd(s, i, d.seps)
		}
		loc := d.re.FindStringIndex(s[i:end])
		if loc == nil && end == len(s) {
			break
		}
		if loc == nil {
			i = end // no match begins from i to the segment's end
			continue
		}
		sp.replace(i+loc[0], i+loc[1], f(s[i+loc[0]:i+loc[1]]))
		i = sp.last - 1
	}
	return sp.String()
}

func (d *detector) startsAt(s string, i int) bool {
	for _, st := range d.starts {
		if len(s)-i < len(st) {
			continue
		}
		if d.fold && asciiEqualFold(s[i:i+len(st)], st) || s[i:i+len(st)] == st {
			return true
		}
	}
	return false
}

// asciiEqualFold is strings.EqualFold for a pattern of ASCII letters, whose
// (?i) matches are ASCII letters too (no rune beyond ASCII folds to b, e,
// a or r).
func asciiEqualFold(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		if s[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// isWordByte is \b's idea of a word character: ASCII letters, digits, _.
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func marker(kind string) string { return "[REDACTED:" + kind + "]" }

// String redacts plain text and returns how many secrets it replaced.
func (r *Redactor) String(s string) (string, int) {
	if r == nil {
		r = &Redactor{}
	}
	if !mayHold(r, s) {
		// Nothing any detector or exact secret needs, outside porthole's
		// own markers: the common case, at the cost of one scan.
		return s, 0
	}
	return r.replace(s)
}

// hintedDetectors is the set of detectors, by their index in detectors,
// whose hints s holds: one pass over s, looking a pair of bytes up at each
// position, with the hints that begin there compared where the pair
// begins one. A replacement (a marker) holds nothing a detector finds, so
// the set read before the first replacement serves for the rest.
func hintedDetectors(s string) uint64 {
	var set uint64
	for i := 0; i+1 < len(s); i++ {
		c, next := s[i], s[i+1]
		if hintPairs[c][next>>6]&(1<<(next&63)) == 0 {
			continue
		}
		for _, h := range hintsByFirstByte[c] {
			if h.detector >= 0 && len(s)-i >= len(h.s) && (h.fold && asciiEqualFold(s[i:i+len(h.s)], h.s) || !h.fold && s[i:i+len(h.s)] == h.s) {
				set |= 1 << h.detector
			}
		}
	}
	return set
}

// replace is String without its fast path.
func (r *Redactor) replace(s string) (string, int) {
	n := 0
	for _, secret := range r.exact {
		if c := strings.Count(s, secret); c > 0 {
			s = strings.ReplaceAll(s, secret, marker("secret"))
			n += c
		}
	}
	hinted := hintedDetectors(s)
	for k, d := range detectors {
		if hinted&(1<<k) == 0 {
			continue
		}
		s = d.replaceAll(s, func(m string) string {
			lo, hi := 0, len(m)
			if d.group > 0 {
				if sub := d.re.FindStringSubmatchIndex(m); sub != nil && sub[2*d.group] >= 0 {
					lo, hi = sub[2*d.group], sub[2*d.group+1]
				}
			}
			// A secret that is already a marker (password=[REDACTED:password])
			// was redacted before: redacting twice gives what once gave.
			if d.accept != nil && !d.accept(m[lo:hi]) || markerLen(m[lo:hi], 0) == hi-lo {
				return m
			}
			n++
			return m[:lo] + marker(d.kind) + m[hi:]
		})
	}
	s = r.replacePersonal(s, &n)
	return s, n
}

// JSON redacts a JSON document and returns how many secrets it replaced.
// Input that is not valid JSON is redacted as plain text.
func (r *Redactor) JSON(b []byte) ([]byte, int) {
	if r == nil {
		r = &Redactor{}
	}
	if !r.docMayHoldSecret(b) {
		return b, 0
	}
	if !json.Valid(b) {
		s, n := r.replace(string(b)) // the fast path above has run
		return []byte(s), n
	}
	return r.jsonLiterals(b, 0)
}

// maxDepth bounds the recursion into string literals that hold JSON.
const maxDepth = 4

// jsonLiterals rewrites each string literal of a valid JSON text.
func (r *Redactor) jsonLiterals(b []byte, depth int) ([]byte, int) {
	var out []byte // allocated on the first change
	total := 0
	last := 0
	nesting := 0 // of the document at depth 0, outside its strings
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			if !r.cards {
				// Only the card detector reads outside strings.
				continue
			}
			nesting += nestingStep(b[i])
			topID := isDigit(b[i]) && depth == 0 && nesting == 1 && afterIDKey(b, i)
			if end := r.cardNumberToken(b, i, topID); end > 0 {
				out = appendCardMarker(out, b, last, i)
				total++
				last, i = end, end-1
			}
			continue
		}
		end := literalEnd(b, i)
		lit := b[i : end+1]
		i = end
		red, n := r.literal(lit, depth)
		if n == 0 {
			continue
		}
		total += n
		enc, _ := json.Marshal(red)
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[last:i-len(lit)+1]...)
		out = append(out, enc...)
		last = i + 1
	}
	if out == nil {
		return b, 0
	}
	return append(out, b[last:]...), total
}

// nestingStep is what c, outside a string, adds to a document's nesting.
func nestingStep(c byte) int {
	switch c {
	case '{', '[':
		return 1
	case '}', ']':
		return -1
	}
	return 0
}

// literal is a JSON string literal's text redacted, and how many secrets
// it replaced (0: the literal stays as it is).
func (r *Redactor) literal(lit []byte, depth int) (string, int) {
	if !r.mayHoldSecret(lit) {
		return "", 0
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", 0
	}
	if !mayHold(r, s) {
		// The decoded text holds nothing to redact, and so neither
		// does any JSON inside it (its literals are parts of it).
		return "", 0
	}
	red, n := r.replace(s) // mayHold has just run on s
	if depth < maxDepth {
		if t := strings.TrimSpace(red); len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			inner, m := r.jsonLiterals([]byte(red), depth+1)
			red, n = string(inner), n+m
		}
	}
	return red, n
}

// appendCardMarker appends to out (allocated on the first change) what
// lies in b from last to i, then a card marker in place of a number.
func appendCardMarker(out, b []byte, last, i int) []byte {
	if out == nil {
		out = make([]byte, 0, len(b))
	}
	return append(append(out, b[last:i]...), `"`+marker(PersonalCard)+`"`...)
}

// literalEnd returns the index of the quote closing the literal that opens
// at start. The input is valid JSON, so it exists.
func literalEnd(b []byte, start int) int {
	for j := start + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b) - 1
}

// MayHold reports whether JSON(b) or String(b) might replace anything in
// b: false means neither would. It is their fast path alone, for a
// caller that knows a part of a document is another part written again
// (gateway's answer, whose text block is its structured content as a
// string).
func (r *Redactor) MayHold(b []byte) bool {
	if r == nil {
		r = &Redactor{}
	}
	return mayHold(r, b)
}

// docMayHoldSecret is the fast path for a whole document: without an escape
// that could hide a character of a hint or secret, no detector's hint and no
// exact secret anywhere in it, at any depth of nesting, there is nothing to
// redact. It reads the document once (twice when an exact secret has
// no probe and JSON writes it with escapes, to look for a backslash).
func (r *Redactor) docMayHoldSecret(b []byte) bool { return mayHold(r, b) }

// mayHold is docMayHoldSecret over a document or a decoded string. A
// hint is a necessary condition of a detector's match, and every hint and
// every exact secret (when all are printable ASCII) is made of printable
// ASCII; so a document whose raw bytes hold none of them outside porthole's
// own markers, and whose escapes all decode to characters beyond ASCII,
// holds none of them after any number of decodings either: a \u escape of a
// character beyond ASCII, at whatever depth of nesting it is read, stands
// for that character, which no hint contains. Every other \u (of an ASCII
// character, a backslash or a letter u among them, or not followed by four
// hex digits) and every \/ sends the document down the slow path.
func mayHold[T string | []byte](r *Redactor, b T) bool {
	return holdsExact(r, b) || holdsHint(r, b) || r.personal != nil && personalHolds(r, b)
}

// holdsExact reports whether, when an exact secret is one JSON writes with
// escapes and has no probe, b holds a backslash. (The secrets and probes
// themselves are looked for by holdsHint, in the same pass as the hints.)
func holdsExact[T string | []byte](r *Redactor, b T) bool {
	if !r.escapedExact {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			return true
		}
	}
	return false
}

// holdsHint reports whether a detector's hint, an exact secret or a probe
// of one, or a \u escape that could spell a hint, begins anywhere in b.
//
// It reads the pair at every other position only. Whatever begins at an
// odd position i with three bytes or more has its second and third bytes
// at the even position i+1; a two-byte hint (\u, \/) begins with a
// backslash, which ends the pair at the even position i-1. So the set
// hintCovers (with the exact secrets' and probes' pairs, r.covers) holds
// the first two and the second and third bytes of everything looked for,
// and every pair that ends in a backslash; where an even position j holds
// one, the full test runs at j-1, j and j+1. Reading half the positions
// halved the cost of a clean answer's scan.
func holdsHint[T string | []byte](r *Redactor, b T) bool {
	covers, pairs := r.covers, r.pairs
	if covers == nil {
		covers, pairs = &hintCovers, &hintPairs
	}
	n := len(b)
	for j := 0; j+1 < n; j += 2 {
		if !covers.has(b[j], b[j+1]) {
			continue
		}
		// The first pair's table, looked up here, rules out most of the
		// three positions before the full test.
		for i := max(j-1, 0); i <= j+1 && i+1 < n; i++ {
			if c, next := b[i], b[i+1]; pairs[c][next>>6]&(1<<(next&63)) != 0 && hintBeginsAt(r, b, i) {
				return true
			}
		}
	}
	return false
}

// hintBeginsAt reports whether a detector's hint, an exact secret or a
// probe of one, or a \u escape that could spell a hint, begins at b[i],
// where the pair b[i], b[i+1] begins one of them (the pairs table says
// so: every hint and secret has two bytes or more).
func hintBeginsAt[T string | []byte](r *Redactor, b T, i int) bool {
	c, next := b[i], b[i+1]
	if r.byFirst != nil && secretAt(r.byFirst[c], b, i) {
		return true
	}
	if c == '\\' && next == 'u' {
		return r.nonASCIIExact || !escapesBeyondASCII(b, i)
	}
	return hintAt(b, i)
}

// secretAt reports whether one of secrets begins at b[i].
func secretAt[T string | []byte](secrets []string, b T, i int) bool {
	for _, e := range secrets {
		if len(b)-i >= len(e) && string(b[i:i+len(e)]) == e {
			return true
		}
	}
	return false
}

// hintAt reports whether a hint not already redacted begins at b[i].
func hintAt[T string | []byte](b T, i int) bool {
	for _, h := range hintsByFirstByte[b[i]] {
		second := b[i+1]
		if h.fold {
			second |= 0x20
		}
		if second != h.s[1] || len(b)-i < len(h.s) {
			continue
		}
		at := string(b[i : i+len(h.s)])
		if (h.fold && strings.EqualFold(at, h.s) || !h.fold && at == h.s) && !redactedAlready(b, i, len(h.s)) {
			return true
		}
	}
	return false
}

// escapesBeyondASCII reports whether b[i:] begins with \uXXXX naming a
// character beyond ASCII (a surrogate half counts: it is one).
func escapesBeyondASCII[T string | []byte](b T, i int) bool {
	if len(b)-i < 6 {
		return false
	}
	v := 0
	for _, c := range []byte{b[i+2], b[i+3], b[i+4], b[i+5]} {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return false
		}
	}
	return v >= 0x80
}

// lastIndex is strings.LastIndex over a string or bytes.
func lastIndex[T string | []byte](b T, sub string) int {
	for j := len(b) - len(sub); j >= 0; j-- {
		if string(b[j:j+len(sub)]) == sub {
			return j
		}
	}
	return -1
}

func hasPrefix[T string | []byte](b T, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

type hint struct {
	s    string
	fold bool
	// detector is the index in detectors of the detector the hint is
	// for, or -1 for an escape that could hide one.
	detector int
}

// hintsByFirstByte are every detector's hints, and the escapes that could
// hide one, by their first byte (both cases of it for a hint in any
// case). TestDocHintsCoverEveryDetector still holds that the fast path
// passes nothing a detector would redact.
var (
	hintsByFirstByte = func() (t [256][]hint) {
		for _, h := range []string{`\u`, `\/`} {
			t[h[0]] = append(t[h[0]], hint{s: h, detector: -1})
		}
		for k, d := range detectors {
			for _, h := range d.hintTexts() {
				t[h[0]] = append(t[h[0]], hint{s: h, fold: d.fold, detector: k})
				if d.fold {
					t[h[0]-32] = append(t[h[0]-32], hint{s: h, fold: true, detector: k})
				}
			}
		}
		return t
	}()
	// hintCovers are coverPairs of the hints.
	hintCovers = func() (t pairSet) {
		for c, hs := range hintsByFirstByte {
			for _, h := range hs {
				for _, a := range cases(byte(c), false) {
					for _, b := range cases(h.s[1], h.fold) {
						t.add(a, b)
						if len(h.s) > 2 {
							for _, d := range cases(h.s[2], h.fold) {
								t.add(b, d)
							}
						}
					}
				}
			}
		}
		for a := 0; a < 256; a++ {
			t.add(byte(a), '\\') // the two-byte hints, \u and \/, at an odd position
		}
		return t
	}()
	// hintPairs[c] is the set of bytes that follow c in the first two
	// bytes of a hint, in any case a fold hint allows.
	hintPairs = func() (t [256][4]uint64) {
		for c, hs := range hintsByFirstByte {
			for _, h := range hs {
				for _, n := range []byte{h.s[1], h.s[1] &^ 0x20} {
					if h.fold || n == h.s[1] {
						t[c][n>>6] |= 1 << (n & 63)
					}
				}
			}
		}
		return t
	}()
)

// cases is c, and with fold its other ASCII case.
func cases(c byte, fold bool) []byte {
	switch {
	case fold && 'a' <= c && c <= 'z':
		return []byte{c, c - 32}
	case fold && 'A' <= c && c <= 'Z':
		return []byte{c, c + 32}
	}
	return []byte{c}
}

// mayHoldSecret is the fast path for one literal: the document's test,
// applied to the literal alone.
func (r *Redactor) mayHoldSecret(lit []byte) bool {
	return !utf8.Valid(lit) || r.docMayHoldSecret(lit)
}

// redactedAlready reports whether the hint at b[i:i+n] is part of porthole's
// own output: inside a marker ("[REDACTED:aws-secret-access-key]") or the
// scheme a Bearer marker keeps ("Bearer [REDACTED:bearer]"). Without this,
// every answer that once held a secret would take the slow path at the
// wire. Only a closed marker naming one of the kinds porthole writes counts:
// text made to look like an open marker does not hide what follows it, and
// a made-up closed one of lowercase letters and dashes does not hide a token
// of that shape ("[REDACTED:xoxb-abcdefghijkl]" is a Slack token in a
// costume; no real marker holds the hint of a detector that could match it).
func redactedAlready[T string | []byte](b T, i, n int) bool {
	const open = "[REDACTED:"
	if m := markerLen(b[i+n:], 1); m > 0 {
		return true // "Bearer [REDACTED:bearer]"
	}
	lo := max(0, i-len(open)-32)
	j := lastIndex(b[lo:i], open)
	if j < 0 {
		return false
	}
	start := lo + j
	m := markerLen(b[start:], 0)
	return m > 0 && i+n <= start+m-1
}

// markerKinds are the kinds a marker porthole writes can name.
var markerKinds = func() map[string]bool {
	kinds := map[string]bool{"secret": true, "partial": true, PersonalEmail: true, PersonalPhone: true, PersonalIBAN: true, PersonalCard: true}
	for _, d := range detectors {
		kinds[d.kind] = true
	}
	return kinds
}()

// markerLen is the length of a marker at the start of b, after skip spaces,
// or 0 when there is none.
func markerLen[T string | []byte](b T, skip int) int {
	const open = "[REDACTED:"
	if len(b) < skip || !hasPrefix(b[skip:], open) || (skip > 0 && b[0] != ' ') {
		return 0
	}
	for k := skip + len(open); k < len(b) && k < skip+len(open)+40; k++ {
		switch c := b[k]; {
		case c == ']':
			if !markerKinds[string(b[skip+len(open):k])] {
				return 0
			}
			return k + 1 - skip
		case c >= 'a' && c <= 'z' || c == '-':
		default:
			return 0
		}
	}
	return 0
}

// MinPartialLen is the fewest characters TrailingPartial takes for the
// start of a secret.
const MinPartialLen = 8

// TrailingPartial returns where, at the end of s, a secret may begin that
// s holds only part of: its last MinPartialLen or more bytes that begin an
// exact secret the redactor knows, or its last MinPartialLen or more bytes
// when they begin, at a word boundary, the way a detector's secret begins
// and hold only what such a secret may hold (ghp_ then letters and digits,
// say), or, with a personal-data detector on, the way what it finds
// begins (personalPartial). It returns len(s) when there is none. A caller that cut s there
// replaces s[i:], so that a cut never shows the first part of a secret that
// the cut made unrecognisable.
func (r *Redactor) TrailingPartial(s string) int {
	if r == nil {
		r = &Redactor{}
	}
	best := len(s)
	for _, e := range r.exact {
		for k := min(len(e)-1, len(s)); k >= MinPartialLen; k-- {
			if strings.HasSuffix(s, e[:k]) {
				best = min(best, len(s)-k)
				break
			}
		}
	}
	for _, st := range partialStarts {
		best = min(best, st.earliestIn(s))
	}
	for _, d := range r.personal {
		best = min(best, personalPartial(d.kind, s))
	}
	return best
}

// earliestIn is where, earliest, a candidate of this start begins in s: a
// start at a word boundary whose tail, to the end of s, holds only what
// such a secret holds (no longer than max, accepted), MinPartialLen or
// more bytes from the end; len(s) when there is none. It reads s about
// twice: the candidates lie in the run of allowed bytes at the end, found
// once, and are tried from the left, where the first that holds is the
// earliest. (Trying each start from the right against its whole tail was
// quadratic in a run of starts.) A tail that fails accept fails it
// shorter too (accept asks for kinds of bytes the tail holds).
func (st *partialStart) earliestIn(s string) int {
	run := len(s)
	for run > 0 && st.follow(s[run-1]) {
		run--
	}
	lo := max(0, run-len(st.text))
	if st.max > 0 {
		lo = max(lo, len(s)-st.max)
	}
	for i := lo; i+len(st.text) <= len(s); i++ {
		j := strings.Index(s[i:], st.text)
		if j < 0 || len(s)-(i+j) < MinPartialLen {
			break
		}
		i += j
		if !atBoundary(s, i) {
			continue
		}
		if st.accept != nil && !st.accept(s[i+len(st.text):]) {
			break
		}
		return i
	}
	return len(s)
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// atBoundary reports whether s[i] begins a word, as \b has it: at the
// start, after a byte that is not a word character, or after a \uXXXX
// escape, which stands for a character that is not one.
func atBoundary(s string, i int) bool {
	if i == 0 || !isWordByte(s[i-1]) {
		return true
	}
	return i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' && allBytes(s[i-4:i], isHexByte)
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
