// Package redact removes secrets from what porthole writes: tool results,
// the stdio stream, the operations log and the audit log.
//
// # Trust model
//
// Anything porthole writes may hold a secret it did not mean to pass on:
// a worker may put a token into a failure message, an upstream server may
// echo a credential, and porthole itself holds secrets (the Temporal API key,
// client key material, the audit key, files an operator lists). A
// [Redactor] replaces the exact secrets it was given, and strings shaped like
// the credentials it has detectors for, with [REDACTED:kind], decoding JSON
// string literals first so that escapes hide nothing. A [LineWriter] applies
// it to each write of a stream.
//
// Redaction finds the secrets it knows and the shapes it has detectors for;
// a credential of another shape passes. It never fails: text it cannot parse
// as JSON is redacted as plain text.
//
// With personal-data detectors switched on ([Redactor.WithPersonal]), it
// also finds e-mail addresses, phone numbers, IBANs and payment-card
// numbers.
//
// # How it reads
//
// Most of what porthole writes holds nothing to redact, so the first read
// is the one that decides whether there is anything to look at: one pass
// over the bytes, reading the pair at every other position against a
// table of the pairs that begin (or, second and third, continue) any
// detector's keyword ("hint") or any exact secret, with the full test
// only where the table says so; with personal-data detectors on, a second
// pass looks for their anchors. A document that passes is returned as it
// is; those passes are the whole cost of a clean answer. Only a text that
// holds a keyword goes on to the detectors whose keywords it holds (found
// in one more pass, as gitleaks picks its rules by keyword), and each runs
// its regular expression only over the words or lines (or, for the AWS
// secret key, the windows) around its starts and keywords; the private
// key's, which begins with a fixed -----BEGIN the regexp package seeks
// itself, along the text.
//
// # The regular-expression engine
//
// The detectors use the standard library's regexp. It runs in time linear
// in its input whatever the pattern and the text (RE2's automata, no
// backtracking), so a hostile upstream cannot make a detector take
// seconds over a crafted answer; it is the engine gitleaks builds with by
// default too (RE2 through WebAssembly behind a build tag), which makes
// the bench's comparison one of the reading around the engine. A
// faster engine (RE2 through cgo or WebAssembly, Hyperscan) would add a
// dependency and a second trust boundary for what the prefilter already
// makes rare: the regular expressions run on the few places a keyword
// marks, not along the text. The personal-data detectors use no regular
// expression: reading outwards from an anchor and checking a check digit
// is code a pattern cannot express.
//
// Quoting somebody else's words with their origin, and escaping identifiers
// for display, is package redact/quote.
package redact
