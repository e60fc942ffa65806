// Package audit writes porthole's audit log: who asked what, when, from
// where, and what came of it, in a file a reviewer can verify.
//
// # Records
//
// The log is JSON lines, one record per line, written by an encoder of its
// own (the format zap's JSON encoder wrote, held to it by a fuzz test, with
// every character beyond ASCII escaped) to a sink of its own (a file, stdout
// or stderr), never mixed into the operations log. Every tools/call and
// tools/list leaves a "call" record before it is dispatched and a "result"
// record after it ends; a request refused at the HTTP front (401, 403, 413,
// 429, invalid JSON-RPC) leaves a "denial" record. docs/audit.md gives the
// schema.
//
// # Trust model
//
// Everything a client sent is untrusted: the tool name, the argument names
// and values, the user agent. Each such string is written as a Go-quoted
// ASCII string (strconv.QuoteToASCII), capped in length, with secrets the
// redactor recognises replaced, so a record is always exactly one line of
// printable ASCII that no log viewer renders as anything but text; nothing
// untrusted is ever a message field. Such text is capped by [Redactor]'s
// Cut (arguments by [ArgsFromJSON]; the user agent, the tool name and a
// denial's reason by the gateway), which redacts before it cuts and leaves
// no start of a secret where it cut; the encoder's own cap is a backstop.
// Principal names come from the tokens file, whose syntax admits only plain
// names.
//
// # Fail closed
//
// [Log.Write] returns only once the record is in the sink. A sink that fails
// or does not answer within the timeout makes Write return
// [ErrUnavailable], and the gateway then refuses the call: nothing reaches
// Temporal unless its call record was written. One goroutine owns the sink,
// so a sink that blocks costs one goroutine, not one per call.
//
// [Log.Problem] says while the sink fails (a failed write or fsync, a write
// held past the timeout, free space below [Config.MinFreeBytes]) and finds
// out by itself when it is well again, since a gateway that says it is not
// ready gets no calls to write; [Log.Stats] counts. Below the minimum free
// space only call records are refused: the space left is for the records
// of calls already made.
//
// # Tamper evidence
//
// Each record carries a sequence number, the SHA-256 of the previous line
// ("prev"), its schema version, the id of its HMAC key and an
// HMAC-SHA256, keyed from PORTHOLE_AUDIT_KEY_FILE, over its own bytes,
// which include prev. Rotation starts the new file with an "anchor" record
// linked to the last record of the old one; a restart continues the chain
// when the file's last record verifies, and otherwise writes a
// "chain-start" record that says why.
//
// The HMAC key sits beside the log, so whoever reads it can rewrite the
// log. With a signing key, the writer also signs checkpoints (Checkpoint):
// Ed25519 statements of a record's sequence number and line hash in a
// chain of a given identity, written into the log, to a witness file and
// to a callback (the operations log). A restart reads the latest witnessed
// checkpoint and never reuses a sequence number; a log shorter than its
// witness gets a chain-start naming the missing records.
//
// What a reviewer runs over the log (verify, report, the HTML page) is
// package [github.com/porthole-dev/porthole/audit/review]; this package
// gives it the chain's reading: [LineParser], [LogFile], [LineHash] and
// [Checkpoint.Check].
package audit
