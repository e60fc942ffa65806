package audit

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is what a record records.
type Kind string

const (
	KindCall       Kind = "call"        // a call, written before it is dispatched
	KindResult     Kind = "result"      // how a call ended
	KindDenial     Kind = "denial"      // a request refused at the front
	KindChainStart Kind = "chain-start" // a new chain, with the reason
	KindAnchor     Kind = "anchor"      // the first record of a rotated-into file
	KindClose      Kind = "close"       // a clean shutdown
	// KindToolChange: an upstream changed the definition of a pinned tool,
	// which porthole withholds until it is re-pinned.
	KindToolChange Kind = "tool-change"
	// KindCheckpoint holds a signed Checkpoint of the record before it.
	KindCheckpoint Kind = "checkpoint"
	// KindPruned says the oldest files of the series were removed, with a
	// signed statement of the last record removed, from which what remains
	// verifies.
	KindPruned Kind = "pruned"
)

// SchemaVersion is the version of the record format porthole writes, in
// every record's "v". Records without one were written before versions
// existed (version 1) and are read as they always were. Version 2 added
// "v", "kid" (the HMAC key's KeyID), the chain identity ("chain") on
// chain-start, anchor and checkpoint records, the gap a chain-start names
// ("missingFrom", "missingTo") and checkpoint records. Version 3 added
// "traceId" (the OpenTelemetry trace, when tracing is on) on call, result
// and denial records. Version 4 added "profile" (the disclosure profile a
// result was made with, when it is not the default) and "opened" (what a
// call's pseudonyms stood for) on result records. Version 5 added
// "clientCert" (the subject of the client certificate the connection
// verified, when porthole serves TLS and requires one) on call, result and
// denial records. Version 6 added, in a log kept as a Merkle tree,
// "note" (the signed C2SP checkpoint of the tree) in checkpoints and
// "tree" (the tree's right edge) on chain-start and anchor records.
const SchemaVersion = 6

// validTraceID reports whether s is a trace id as OpenTelemetry writes
// it: 32 lowercase hex digits, not all zero. Anything else is left out of
// the record rather than written unquoted.
func validTraceID(s string) bool {
	if len(s) != 32 || s == "00000000000000000000000000000000" {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Outcome is how a call or request ended.
type Outcome string

const (
	OutcomeOK              Outcome = "ok"
	OutcomeToolError       Outcome = "tool_error"
	OutcomeDenied          Outcome = "denied"
	OutcomeRateLimited     Outcome = "rate_limited"
	OutcomeInvalid         Outcome = "invalid"
	OutcomeUnauthenticated Outcome = "unauthenticated"
	OutcomeInternal        Outcome = "internal"
	// OutcomeUnavailable is a request refused (503) because the rate
	// limits shared by the replicas (Redis) could not be checked.
	OutcomeUnavailable Outcome = "unavailable"
)

// Record is one audit record. Fields that came from a client are written
// quoted; see the package doc.
type Record struct {
	Kind       Kind
	RequestID  string
	Principal  string // quoted like every name a caller goes by
	ClientAddr string
	// ClientCert is the subject of the client certificate the connection
	// verified, "" for none (schema version 5). A CA vouched for it, but
	// its text is the client's: it is written quoted.
	ClientCert string
	Transport  string // "http" or "stdio"
	UserAgent  string // untrusted: quoted
	Method     string // the JSON-RPC method porthole recognised, e.g. tools/call
	Tool       string // untrusted: quoted
	Upstream   string // the roster name of the upstream MCP server a tool belongs to
	Args       []Arg
	// ArgsOmitted counts the arguments of a call beyond what one record
	// holds (MaxArgs, MaxArgsBytes), and ArgsOmittedSHA256 is the hex
	// SHA-256 of what was left out (see ArgsFromJSON).
	ArgsOmitted       int
	ArgsOmittedSHA256 string

	// For results and denials.
	Outcome     Outcome
	Status      int // HTTP status of a denial
	Reason      string
	Duration    time.Duration
	ResultBytes int
	Redactions  int
	Cached      bool
	// Profile names the disclosure profile (or the profiles merged,
	// joined by "+") a result was made with; "" for the default, which
	// keeps everything (schema version 4).
	Profile string
	// Opened are, on a result, the values the call's pseudonyms stood for,
	// by argument ("query" for a query whose pseudonyms were translated,
	// as sent to Temporal), so that a reviewer reads real identifiers
	// (schema version 4).
	Opened []Arg

	// For denials summaries (KindDenials): how many, the first and the
	// last, by outcome, status and reason.
	Count       int
	First, Last time.Time
	Groups      []DenialGroup

	// For chain-start and anchor records.
	PreviousFile    string
	PreviousLastSeq uint64

	// The writer sets these. Chain is the chain's identity, on chain-start,
	// anchor and checkpoint records; MissingFrom and MissingTo are the
	// sequence numbers a chain-start says are missing (a log found shorter
	// than its latest witnessed checkpoint); Checkpoint is a checkpoint
	// record's statement.
	Chain                  string
	MissingFrom, MissingTo uint64
	Checkpoint             *Checkpoint
	// Pruned is a pruned record's statement of the last record removed.
	Pruned *Checkpoint
	// Tree, on the chain-start and anchor records of a log kept as a
	// Merkle tree (Config.Origin), is the tree's right edge before the
	// record: what lets a reader whose series begins at the record (the
	// files before it pruned) check the tree's checkpoints.
	Tree *TreeEdge

	// OAuth is who an OAuth access token named, on call and result
	// records of its calls (Principal is then oauth:<alias>:<value>).
	OAuth *OAuthCaller
	// TraceID is the OpenTelemetry trace of the call or the refused
	// request, when tracing is on (schema version 3).
	TraceID string
}

// OAuthCaller is what an audit record says of an OAuth access token: the
// issuer, subject, client and token id, each as the token gave it (quoted:
// an issuer's claims are not porthole's words).
type OAuthCaller struct {
	Issuer, Subject, ClientID, TokenID string
}

// Arg is one argument of a call, as the client sent it.
type Arg struct {
	Name      string // untrusted: quoted, capped, redacted
	Value     string // untrusted: quoted, capped, redacted
	Truncated bool   // the name or the value was cut
}

// Untrusted strings are cut at these many bytes before quoting.
const (
	// MaxArgBytes holds whole the largest argument porthole accepts: a
	// page token (policy.MaxPageTokenLen, 4 KiB), and so a visibility query
	// (policy.MaxQueryLen, 2 KiB) and an identifier (1000 bytes).
	// TestTheAuditRecordHoldsEveryAcceptedArgumentWhole holds the two in
	// step. Before schema version 2 it was 512, which cut queries.
	MaxArgBytes       = 4096
	MaxUserAgentBytes = 256
	MaxToolBytes      = 128
)

// A call record holds at most MaxArgs arguments and MaxArgsBytes of their
// names and values as it writes them, quoted and escaped (quotedSize); the
// rest is counted and hashed. A reason is cut at
// MaxReasonBytes.
const (
	MaxArgs        = 32
	MaxArgsBytes   = 16 << 10
	MaxReasonBytes = 512
)

// Quote is how every untrusted string is written: Go-quoted, ASCII only.
func Quote(s string) string { return strconv.QuoteToASCII(s) }

// appendFields appends the record's own fields, in a fixed order, after the
// chain fields the writer adds: each as `,"name":value`. Fields that do not
// apply to the record's kind, and empty optional ones, are left out.
func (r *Record) appendFields(b []byte) []byte {
	b = r.appendWho(b)
	if r.Kind == KindCall {
		b = r.appendArgs(b)
	}
	b = r.appendOutcome(b)
	if r.Kind == KindDenials {
		b = r.appendDenials(b)
	}
	return r.appendChainFields(b)
}

// appendWho appends who asked what, how: the kind, the request, the
// caller (and its OAuth token's names), the method, tool and upstream.
func (r *Record) appendWho(b []byte) []byte {
	b = appendStringField(b, "kind", string(r.Kind))
	b = appendStringField(b, "requestId", r.RequestID)
	if r.Principal != "" {
		b = appendStringField(b, "principal", Quote(capBytes(r.Principal, MaxToolBytes)))
	}
	b = appendStringField(b, "clientAddr", r.ClientAddr)
	if r.ClientCert != "" {
		b = appendStringField(b, "clientCert", Quote(capBytes(r.ClientCert, MaxUserAgentBytes)))
	}
	b = appendStringField(b, "transport", r.Transport)
	if r.UserAgent != "" {
		b = appendStringField(b, "userAgent", Quote(capBytes(r.UserAgent, MaxUserAgentBytes)))
	}
	b = appendStringField(b, "method", r.Method)
	if r.Tool != "" {
		b = appendStringField(b, "tool", Quote(capBytes(r.Tool, MaxToolBytes)))
	}
	b = appendStringField(b, "upstream", r.Upstream)
	if validTraceID(r.TraceID) {
		b = appendStringField(b, "traceId", r.TraceID)
	}
	if o := r.OAuth; o != nil {
		b = append(b, `,"oauth":{"issuer":`...)
		b = appendString(b, Quote(capBytes(o.Issuer, MaxToolBytes*2)))
		b = append(b, `,"subject":`...)
		b = appendString(b, Quote(capBytes(o.Subject, MaxToolBytes)))
		b = append(b, `,"clientId":`...)
		b = appendString(b, Quote(capBytes(o.ClientID, MaxToolBytes)))
		b = append(b, `,"tokenId":`...)
		b = appendString(b, Quote(capBytes(o.TokenID, MaxToolBytes)))
		b = append(b, '}')
	}
	return b
}

// appendArgs appends a call's arguments, and what was left out of them.
func (r *Record) appendArgs(b []byte) []byte {
	b = appendArgList(b, "args", r.Args)
	if r.ArgsOmitted > 0 {
		b = strconv.AppendInt(append(b, `,"argsOmitted":`...), int64(r.ArgsOmitted), 10)
		b = appendStringField(b, "argsOmittedSha256", r.ArgsOmittedSHA256)
	}
	return b
}

// appendOutcome appends how the request ended, and a result's figures.
func (r *Record) appendOutcome(b []byte) []byte {
	b = appendStringField(b, "outcome", string(r.Outcome))
	if r.Status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(r.Status), 10)
	}
	b = appendStringField(b, "reason", capBytes(r.Reason, MaxReasonBytes))
	if r.Kind == KindResult {
		b = strconv.AppendFloat(append(b, `,"durationMs":`...), float64(r.Duration.Microseconds())/1000, 'f', -1, 64)
		b = strconv.AppendInt(append(b, `,"resultBytes":`...), int64(r.ResultBytes), 10)
		b = strconv.AppendInt(append(b, `,"redactions":`...), int64(r.Redactions), 10)
		b = strconv.AppendBool(append(b, `,"cached":`...), r.Cached)
		if r.Profile != "" {
			b = appendStringField(b, "profile", Quote(capBytes(r.Profile, MaxToolBytes)))
		}
		if len(r.Opened) > 0 {
			b = appendArgList(b, "opened", r.Opened)
		}
	}
	return b
}

// appendDenials appends a denial summary's count, span and groups.
func (r *Record) appendDenials(b []byte) []byte {
	b = strconv.AppendInt(append(b, `,"count":`...), int64(r.Count), 10)
	b = appendStringField(b, "first", r.First.UTC().Format(time.RFC3339Nano))
	b = appendStringField(b, "last", r.Last.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"groups":[`...)
	for i, g := range r.Groups {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"count":`...), int64(g.Count), 10)
		b = appendStringField(b, "outcome", string(g.Outcome))
		if g.Status != 0 {
			b = strconv.AppendInt(append(b, `,"status":`...), int64(g.Status), 10)
		}
		b = appendStringField(b, "reason", capBytes(g.Reason, MaxReasonBytes))
		b = append(b, '}')
	}
	b = append(b, ']')
	return b
}

// appendChainFields appends what ties the record into its chain: the file
// and sequence it continues, a gap it records, a checkpoint, a pruning.
func (r *Record) appendChainFields(b []byte) []byte {
	b = appendStringField(b, "previousFile", r.PreviousFile)
	if r.PreviousLastSeq != 0 {
		b = strconv.AppendUint(append(b, `,"previousLastSeq":`...), r.PreviousLastSeq, 10)
	}
	b = appendStringField(b, "chain", r.Chain)
	if r.MissingTo != 0 {
		b = strconv.AppendUint(append(b, `,"missingFrom":`...), r.MissingFrom, 10)
		b = strconv.AppendUint(append(b, `,"missingTo":`...), r.MissingTo, 10)
	}
	if r.Checkpoint != nil {
		// Hex, a number and a time: nothing to escape.
		b = append(append(b, `,"checkpoint":`...), bytes.TrimSuffix(r.Checkpoint.MarshalLine(), []byte("\n"))...)
	}
	if r.Pruned != nil {
		b = append(append(b, `,"pruned":`...), bytes.TrimSuffix(r.Pruned.MarshalLine(), []byte("\n"))...)
	}
	if r.Tree != nil {
		b = r.Tree.appendJSON(append(b, `,"tree":`...))
	}
	return b
}

func (a Arg) appendJSON(b []byte) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, Quote(capBytes(a.Name, MaxToolBytes)))
	b = append(b, `,"value":`...)
	b = appendString(b, Quote(capBytes(a.Value, MaxArgBytes)))
	if a.Truncated || len(a.Name) > MaxToolBytes || len(a.Value) > MaxArgBytes {
		b = append(b, `,"truncated":true`...)
	}
	return append(b, '}')
}

// appendArgList appends `,"name":[...]` of args.
func appendArgList(b []byte, name string, args []Arg) []byte {
	b = append(append(append(b, `,"`...), name...), `":[`...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		b = a.appendJSON(b)
	}
	return append(b, ']')
}

// appendStringField appends `,"name":"value"` unless value is empty.
func appendStringField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string of printable ASCII: quote,
// backslash and controls escaped as zap's JSON encoder escaped them, and,
// unlike zap, every character beyond ASCII as a \u escape (a byte that is
// not UTF-8 as \ufffd), so that a record stays one line of printable ASCII
// whatever a trusted field holds. Untrusted fields reach here already
// quoted to ASCII.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '\\' && c != '"' {
			b = append(b, c)
			i++
			continue
		}
		switch {
		case c == '\\' || c == '"':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			for _, u := range utf16.AppendRune(nil, r) {
				b = append(b, '\\', 'u', hex[u>>12], hex[u>>8&15], hex[u>>4&15], hex[u&15])
			}
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}

// quotedSize is the number of bytes appendString(b, Quote(s)) appends,
// counted without building them: what an untrusted string costs a record.
// Quoting may write a byte as five (\\x01 once escaped for JSON) and a
// character as eleven, so budgets on what a record holds count this, not
// len(s). FuzzQuotedSizeIsWhatTheRecordWrites holds it to the encoder.
//
// Whole: one case per way strconv.QuoteToASCII writes a character.
func quotedSize(s string) int {
	n := 6 // the JSON string's quotes, and Quote's, escaped
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // \\xff
		case r == '"' || r == '\\':
			n += 4 // \\\" and \\\\
		case r == '\a' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t' || r == '\v':
			n += 3 // \\n
		case r < ' ' || r == 0x7f:
			n += 5 // \\x01
		case r < utf8.RuneSelf:
			n++
		case r < 0x10000:
			n += 7 // \\u00e9
		default:
			n += 11 // \\U0001f600
		}
	}
	return n
}

// capBytes cuts s to at most n bytes. The cut may split a UTF-8 sequence;
// quoting then writes the stray bytes as \x escapes, so nothing is lost from
// what is kept.
//
// It is the encoder's backstop: whoever builds a record from untrusted text
// cuts it first with Redactor.Cut, which redacts before it cuts, and a cut
// here, after redaction, could leave the start of a secret.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
