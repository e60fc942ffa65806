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
// Quoting somebody else's words with their origin, and escaping identifiers
// for display, is package redact/quote.
package redact
