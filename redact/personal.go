package redact

import (
	"fmt"
	"slices"
	"strings"
)

// The personal-data detectors, off unless a Redactor is made with them
// (WithPersonal): e-mail addresses, phone numbers, IBANs and payment-card
// numbers. Unlike the credential detectors they have no keyword: each is
// found from an anchor (the @ of an address, the + or the first digit of
// a number, the country code of an IBAN) by code that reads outwards from
// it and checks what a regular expression cannot (an IBAN's mod-97 check
// digits, a card number's Luhn digit). The fast path finds the anchors in
// a pass of its own (personalHolds).
const (
	PersonalEmail = "email"
	PersonalPhone = "phone"
	PersonalIBAN  = "iban"
	PersonalCard  = "card"
)

// PersonalKinds are the personal-data detectors, in the order they run.
var PersonalKinds = []string{PersonalEmail, PersonalIBAN, PersonalCard, PersonalPhone}

// personalDetector finds one kind of personal data.
type personalDetector struct{ kind string }

// personalMatch is the end of a match of kind anchored at s[i], and the
// match's start (which may lie before i, for an address found from its
// @), or ok false. The anchors are cheap to rule out, and are tried
// first.
func personalMatch[T string | []byte](kind string, s T, i int) (lo, hi int, ok bool) {
	switch kind {
	case PersonalEmail:
		if s[i] == '@' {
			return emailAt(s, i)
		}
	case PersonalIBAN:
		if ibanAnchor(s, i) {
			return ibanAt(s, i)
		}
	case PersonalCard:
		if numberAnchor(s, i) {
			return cardAt(s, i)
		}
	case PersonalPhone:
		if phoneAnchor(s, i) {
			return phoneAt(s, i)
		}
	}
	return 0, 0, false
}

// ParsePersonal reads a comma-separated list of personal-data kinds
// (PORTHOLE_REDACT_PERSONAL), refusing an unknown one with a sentence
// that names those there are.
func ParsePersonal(list string) ([]string, error) {
	var kinds []string
	for _, k := range strings.Split(list, ",") {
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case k == "":
		case !slices.Contains(PersonalKinds, k):
			return nil, fmt.Errorf("no personal-data detector is named %q (there are %s)", k, strings.Join(PersonalKinds, ", "))
		case !slices.Contains(kinds, k):
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// WithPersonal is r with the personal-data detectors of kinds switched on
// as well (ParsePersonal's kinds; an unknown one is ignored). r is left as
// it was.
func (r *Redactor) WithPersonal(kinds ...string) *Redactor {
	if r == nil {
		r = &Redactor{}
	}
	out := *r
	out.personal = nil
	for _, k := range PersonalKinds {
		if slices.Contains(kinds, k) {
			out.personal = append(out.personal, personalDetector{kind: k})
		}
	}
	out.cards = slices.Contains(kinds, PersonalCard)
	var first [256]bool
	for _, d := range out.personal {
		for c, ok := range personalFirst[d.kind] {
			first[c] = first[c] || ok
		}
	}
	out.personalFirst = &first
	return &out
}

// Personal are the kinds of r's personal-data detectors switched on, in
// the order of PersonalKinds.
func (r *Redactor) Personal() []string {
	if r == nil {
		return nil
	}
	kinds := make([]string, 0, len(r.personal))
	for _, d := range r.personal {
		kinds = append(kinds, d.kind)
	}
	return kinds
}

// personalHolds reports whether one of r's personal-data detectors finds
// anything in b: a pass that skips every byte no anchor is, and the rest
// of a run of digits once its first is tried (no number begins inside
// another). It is the personal-data detectors' part of the fast path,
// beside the table of pairs, which would have to hold every pair with a
// digit or a capital letter in it to find their anchors, and so would
// send a log line's every other position to the full test.
func personalHolds[T string | []byte](r *Redactor, b T) bool {
	first := r.personalFirst
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !first[c] {
			continue
		}
		if personalAt(r, b, i) {
			return true
		}
		for isDigit(c) && i+1 < len(b) && isDigit(b[i+1]) && !wordStart(b, i+1) {
			i++ // a digit that no escape (\u00a0) ends before begins no number
		}
	}
	return false
}

// personalAt reports whether one of r's personal-data detectors finds a
// match anchored at b[i]: only those whose anchor b[i] can be are tried.
func personalAt[T string | []byte](r *Redactor, b T, i int) bool {
	var ok bool
	switch c := b[i]; {
	case c == '@':
		_, _, ok = personalMatch(PersonalEmail, b, i)
		return ok && r.on(PersonalEmail)
	case isUpper(c):
		return r.on(PersonalIBAN) && ibanAnchor(b, i) && ibanOK(b, i)
	case isDigit(c) && !numberStart(b, i):
		return false // no number begins inside a word or another number
	case isDigit(c) && r.on(PersonalCard):
		if _, _, ok = cardAt(b, i); ok {
			return true
		}
	}
	_, _, ok = phoneAt(b, i)
	return ok && r.on(PersonalPhone)
}

func ibanOK[T string | []byte](b T, i int) bool {
	_, _, ok := ibanAt(b, i)
	return ok
}

// on reports whether the personal-data detector of kind is on.
func (r *Redactor) on(kind string) bool {
	for _, d := range r.personal {
		if d.kind == kind {
			return true
		}
	}
	return false
}

// personalFirst are the bytes each kind's anchor is: the @ of an address,
// the capital letter an IBAN begins with, the first digit of a card
// number (2 to 6), the +, ( or first digit of a phone number.
var personalFirst = func() map[string]*[256]bool {
	set := func(bytes string) *[256]bool {
		var t [256]bool
		for i := 0; i < len(bytes); i++ {
			t[bytes[i]] = true
		}
		return &t
	}
	return map[string]*[256]bool{
		PersonalEmail: set("@"), PersonalIBAN: set("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
		PersonalCard: set("23456"), PersonalPhone: set("+(0123456789"),
	}
}()

// replacePersonal redacts what r's personal-data detectors find in s: for
// each, a pass that skips every byte its anchor cannot be.
func (r *Redactor) replacePersonal(s string, n *int) string {
	for _, d := range r.personal {
		sp := splice{s: s}
		first := personalFirst[d.kind]
		for i := 0; i < len(s); i++ {
			if !first[s[i]] {
				continue
			}
			lo, hi, ok := personalMatch(d.kind, s, i)
			if !ok || lo < sp.last {
				continue
			}
			sp.replace(lo, hi, marker(d.kind))
			*n++
			i = hi - 1
		}
		s = sp.String()
	}
	return s
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || 'a' <= c && c <= 'z' }

// wordStart reports whether s[i] begins a word: at the start, after a
// byte that is no letter, digit or underscore, or after a JSON escape
// (\n, \t, \r, \b, \f, or \u and four hex digits), which stands for a
// character that is no ASCII letter or digit (a \u escape of one sends a
// document down the slow path anyway): so a document read as it is and
// read decoded agree.
//
// Whole: one case for each kind of byte that ends a word.
func wordStart[T string | []byte](s T, i int) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	if !isAlnum(c) && c != '_' {
		return true
	}
	if i >= 2 && s[i-2] == '\\' && (c == 'n' || c == 't' || c == 'r' || c == 'b' || c == 'f') {
		return true
	}
	if i < 6 || s[i-6] != '\\' || s[i-5] != 'u' {
		return false
	}
	for k := i - 4; k < i; k++ {
		if !isHexByte(s[k]) {
			return false
		}
	}
	return true
}

// numberStart reports whether s[i] can begin a number that stands alone:
// the first of its digits, not in a word, a decimal or a version.
func numberStart[T string | []byte](s T, i int) bool {
	if !wordStart(s, i) {
		return false
	}
	if i == 0 {
		return true
	}
	c := s[i-1]
	return c != '.' && c != '-' && c != '+' && c != '/'
}

// numberEnd reports whether a number ending before s[i] stands alone.
func numberEnd[T string | []byte](s T, i int) bool {
	if i == len(s) {
		return true
	}
	c := s[i]
	if c == '.' || c == '-' || c == ':' || c == '/' {
		return i+1 == len(s) || !isAlnum(s[i+1]) // a full stop, not a decimal or a date
	}
	return !isAlnum(c) && c != '_'
}

// isLocalByte and isDomainByte are what an address's local part and domain
// hold, as addresses are written in text.
func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainByte(c byte) bool { return isAlnum(c) || c == '-' || c == '.' }

// emailAt finds the address whose @ is s[i]: a local part of up to 64
// bytes, and a domain of labels with a dot and a final label of two
// letters or more.
//
// Whole: it reads outwards from the @, then checks the domain, in order.
func emailAt[T string | []byte](s T, i int) (lo, hi int, ok bool) {
	if i == 0 || i+1 >= len(s) || s[i] != '@' {
		return 0, 0, false
	}
	lo = i
	for lo > 0 && i-lo < 64 && isLocalByte(s[lo-1]) {
		lo--
	}
	for lo < i && s[lo] == '.' {
		lo++
	}
	if lo == i {
		return 0, 0, false
	}
	hi = i + 1
	for hi < len(s) && hi-i <= 255 && isDomainByte(s[hi]) {
		hi++
	}
	for hi > i+1 && (s[hi-1] == '.' || s[hi-1] == '-') {
		hi-- // a full stop or a dash after the address
	}
	domain := s[i+1 : hi]
	dot := lastIndex(domain, ".")
	if dot <= 0 || len(domain)-dot-1 < 2 || lastIndex(domain, "..") >= 0 {
		return 0, 0, false
	}
	for k := dot + 1; k < len(domain); k++ {
		if c := domain[k]; isDigit(c) || c == '-' {
			return 0, 0, false // an address's last label is a word: not 10.0.0.1
		}
	}
	return lo, hi, true
}

// groupedDigits reads, from s[i], digits in groups separated by single
// spaces or single dashes (one kind of separator throughout), and
// returns how many digits it read (at most most+1) and where they end.
func groupedDigits[T string | []byte](s T, i, most int) (n, end int) {
	var sep byte
	end = i
	for j := i; j < len(s) && n <= most; j++ {
		c := s[j]
		switch {
		case isDigit(c):
			n++
			end = j + 1
		case (c == ' ' || c == '-') && (sep == 0 || sep == c) && j > i && isDigit(s[j-1]) && j+1 < len(s) && isDigit(s[j+1]):
			sep = c
		default:
			return n, end
		}
	}
	return n, end
}

func numberAnchor[T string | []byte](s T, i int) bool { return isDigit(s[i]) && numberStart(s, i) }

// cardAt finds a payment-card number that begins at s[i]: 13 to 19 digits
// (in groups, or not) beginning 2 to 6, as the card networks' numbers do,
// whose last digit is its Luhn check digit.
func cardAt[T string | []byte](s T, i int) (lo, hi int, ok bool) {
	if !numberAnchor(s, i) || s[i] < '2' || s[i] > '6' {
		return 0, 0, false
	}
	n, end := groupedDigits(s, i, 19)
	if n < 13 || n > 19 || !numberEnd(s, end) || !luhn(s[i:end]) {
		return 0, 0, false
	}
	return i, end, true
}

// luhn reports whether the last of the digits in s is their Luhn check
// digit (what is not a digit, a separator, is passed over).
func luhn[T string | []byte](s T) bool {
	sum, k := 0, 0
	for j := len(s) - 1; j >= 0; j-- {
		if !isDigit(s[j]) {
			continue
		}
		d := int(s[j] - '0')
		if k%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		k++
	}
	return sum%10 == 0
}

func ibanAnchor[T string | []byte](s T, i int) bool {
	return i+3 < len(s) && isUpper(s[i]) && isUpper(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) && wordStart(s, i)
}

// ibanAt finds an IBAN that begins at s[i]: a country code, two check
// digits and 11 to 30 letters and digits, in groups of four or not, whose
// check digits hold (ISO 13616's mod 97).
//
// Whole: a read of the characters, then the check, in order.
func ibanAt[T string | []byte](s T, i int) (lo, hi int, ok bool) {
	if !ibanAnchor(s, i) {
		return 0, 0, false
	}
	var chars []byte
	end := i
	for j := i; j < len(s) && len(chars) <= 34; j++ {
		c := s[j]
		switch {
		case isUpper(c) || isDigit(c):
			chars = append(chars, c)
			end = j + 1
		case c == ' ' && len(chars)%4 == 0 && j+1 < len(s) && (isUpper(s[j+1]) || isDigit(s[j+1])):
		default:
			j = len(s)
		}
	}
	if len(chars) < 15 || len(chars) > 34 || end < len(s) && (isAlnum(s[end]) || s[end] == '_') {
		return 0, 0, false
	}
	rearranged := append(append([]byte{}, chars[4:]...), chars[:4]...)
	rem := 0
	for _, c := range rearranged {
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	return i, end, rem == 1
}

func phoneAnchor[T string | []byte](s T, i int) bool {
	switch c := s[i]; {
	case c == '+':
		return i+1 < len(s) && isDigit(s[i+1]) && s[i+1] != '0' && wordStart(s, i)
	case c == '(':
		return i+1 < len(s) && isDigit(s[i+1]) && wordStart(s, i)
	}
	return numberAnchor(s, i)
}

// phoneAt finds a phone number that begins at s[i]: an international one
// (+, a country code, 8 to 15 digits in all, grouped by single spaces,
// dashes or dots, an area code perhaps in parentheses), or a North
// American one ((555) 123-4567, 555-123-4567, 555.123.4567). A bare run
// of digits is not taken for one: it is as likely an id or a time.
//
// Whole: the North American form is one fixed shape, read in order.
func phoneAt[T string | []byte](s T, i int) (lo, hi int, ok bool) {
	if !phoneAnchor(s, i) {
		return 0, 0, false
	}
	if s[i] == '+' {
		n, end := phoneDigits(s, i+1, 15)
		return i, end, n >= 8 && n <= 15 && numberEnd(s, end)
	}
	// (555) 123-4567 or 555-123-4567 or 555.123.4567
	j := i
	paren := s[j] == '('
	if paren {
		j++
	}
	if j+3 > len(s) || !allDigits(s[j:j+3]) || s[j] < '2' {
		return 0, 0, false
	}
	j += 3
	if paren {
		if j+1 >= len(s) || s[j] != ')' {
			return 0, 0, false
		}
		j++
		if s[j] == ' ' {
			j++
		}
	} else {
		if j >= len(s) || s[j] != '-' && s[j] != '.' {
			return 0, 0, false
		}
		j++
	}
	if j+8 > len(s) || !allDigits(s[j:j+3]) || s[j+3] != '-' && s[j+3] != '.' || !allDigits(s[j+4:j+8]) {
		return 0, 0, false
	}
	if !paren && s[j+3] != s[i+3] {
		return 0, 0, false // 555-123.4567 mixes separators, as no number does
	}
	return i, j + 8, numberEnd(s, j+8)
}

// phoneDigits reads the digits of an international number after its +:
// single spaces, dashes or dots between groups, and one area code in
// parentheses.
//
// Whole: one case for each byte a number may hold.
func phoneDigits[T string | []byte](s T, i, most int) (n, end int) {
	end = i
	paren := false
	for j := i; j < len(s) && n <= most; j++ {
		c := s[j]
		switch {
		case isDigit(c):
			n++
			end = j + 1
		case c == '(' && !paren && j > i && (s[j-1] == ' ' || isDigit(s[j-1])) && j+1 < len(s) && isDigit(s[j+1]):
			paren = true
		case c == ')' && paren && isDigit(s[j-1]) && j+1 < len(s) && (s[j+1] == ' ' || isDigit(s[j+1])):
		case (c == ' ' || c == '-' || c == '.') && isDigit(s[j-1]) && j+1 < len(s) && (isDigit(s[j+1]) || s[j+1] == '('):
		default:
			return n, end
		}
	}
	return n, end
}

func allDigits[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// personalPartial is where, at the end of s, the first part of what the
// detector of kind finds may begin, MinPartialLen or more bytes from the
// end: an address cut before its domain ends (alice@exam), a number cut
// before its last digit (4111 1111 1111, +44 20 79), an IBAN cut before
// its end; len(s) when there is none.
func personalPartial(kind string, s string) int {
	var start int
	switch kind {
	case PersonalEmail:
		start = emailPartial(s)
	case PersonalCard, PersonalPhone:
		start = numberPartial(s)
	case PersonalIBAN:
		start = ibanPartial(s)
	}
	if len(s)-start < MinPartialLen {
		return len(s)
	}
	return start
}

// trailing is where the run of bytes ok accepts that ends s begins.
func trailing(s string, ok func(c byte) bool) int {
	i := len(s)
	for i > 0 && ok(s[i-1]) {
		i--
	}
	return i
}

// emailPartial is where the address at the end of s, if any, begins.
func emailPartial(s string) int {
	i := trailing(s, func(c byte) bool { return isLocalByte(c) || c == '@' })
	if strings.IndexByte(s[i:], '@') <= 0 {
		return len(s)
	}
	return i
}

// numberPartial is where the number at the end of s, if any, begins.
func numberPartial(s string) int {
	i := trailing(s, func(c byte) bool {
		return isDigit(c) || c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '+'
	})
	for i < len(s) && !isDigit(s[i]) && s[i] != '+' && s[i] != '(' {
		i++
	}
	if i == len(s) || !numberStart(s, i) && s[i] != '+' && s[i] != '(' {
		return len(s)
	}
	return i
}

// ibanPartial is where the IBAN at the end of s, if any, begins.
func ibanPartial(s string) int {
	i := trailing(s, func(c byte) bool { return isUpper(c) || isDigit(c) || c == ' ' })
	for i+1 < len(s) && !(isUpper(s[i]) && isUpper(s[i+1]) && wordStart(s, i)) {
		i++
	}
	if i+1 >= len(s) {
		return len(s)
	}
	return i
}

// cardNumberToken is the end of a JSON number at b[i] that is a
// payment-card number (digits only, cardAt's rules), or 0: the card
// detector reads numbers in JSON too, not only strings. A JSON-RPC
// message's own id (a number after "id": at the top of the document, as
// topID says) is the client's to match its answer by, and is left alone.
func (r *Redactor) cardNumberToken(b []byte, i int, topID bool) int {
	if !r.cards || topID || !isDigit(b[i]) || i > 0 && !isJSONDelimiter(b[i-1]) {
		return 0
	}
	j := i
	for j < len(b) && isDigit(b[j]) {
		j++
	}
	if j < len(b) && !isJSONDelimiter(b[j]) {
		return 0 // a decimal, an exponent
	}
	if _, hi, ok := cardAt(b[i:j], 0); ok && hi == j-i {
		return j
	}
	return 0
}

func isJSONDelimiter(c byte) bool {
	return c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// afterIDKey reports whether b[:i] ends in the key "id" and its colon,
// white space allowed around the colon.
func afterIDKey(b []byte, i int) bool {
	j := i
	for j > 0 && isSpace(b[j-1]) {
		j--
	}
	if j == 0 || b[j-1] != ':' {
		return false
	}
	j--
	for j > 0 && isSpace(b[j-1]) {
		j--
	}
	return j >= 4 && string(b[j-4:j]) == `"id"`
}
