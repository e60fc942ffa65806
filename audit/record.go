package audit

import (
	"strconv"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
)

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
)

// Record is one audit record. Fields that came from a client are written
// quoted; see the package doc.
type Record struct {
	Kind       Kind
	RequestID  string
	Principal  string // quoted like every name a caller goes by
	ClientAddr string
	Transport  string // "http" or "stdio"
	UserAgent  string // untrusted: quoted
	Method     string // the JSON-RPC method porthole recognised, e.g. tools/call
	Tool       string // untrusted: quoted
	Upstream   string // the roster name of the upstream MCP server a tool belongs to
	Args       []Arg

	// For results and denials.
	Outcome     Outcome
	Status      int // HTTP status of a denial
	Reason      string
	Duration    time.Duration
	ResultBytes int
	Redactions  int
	Cached      bool

	// For chain-start and anchor records.
	PreviousFile    string
	PreviousLastSeq uint64
}

// Arg is one argument of a call, as the client sent it.
type Arg struct {
	Name      string // untrusted: quoted
	Value     string // untrusted: quoted, capped, redacted
	Truncated bool
}

// Untrusted strings are cut at these many bytes before quoting.
const (
	MaxArgBytes       = 512
	MaxUserAgentBytes = 256
	MaxToolBytes      = 128
)

// Quote is how every untrusted string is written: Go-quoted, ASCII only.
func Quote(s string) string { return strconv.QuoteToASCII(s) }

// encoderConfig writes only the fields porthole adds: no level, no message,
// no caller, no zap time (porthole writes its own, in UTC).
var encoderConfig = zapcore.EncoderConfig{
	LineEnding:     "\n",
	EncodeDuration: zapcore.MillisDurationEncoder,
	EncodeTime:     zapcore.RFC3339NanoTimeEncoder,
}

// fields renders the record's own fields, in a fixed order, after the
// chain fields the writer adds.
func (r *Record) fields() []zap.Field {
	f := []zap.Field{zap.String("kind", string(r.Kind))}
	str := func(key, v string) {
		if v != "" {
			f = append(f, zap.String(key, v))
		}
	}
	str("requestId", r.RequestID)
	if r.Principal != "" {
		f = append(f, zap.String("principal", Quote(capBytes(r.Principal, MaxToolBytes))))
	}
	str("clientAddr", r.ClientAddr)
	str("transport", r.Transport)
	if r.UserAgent != "" {
		f = append(f, zap.String("userAgent", Quote(capBytes(r.UserAgent, MaxUserAgentBytes))))
	}
	str("method", r.Method)
	if r.Tool != "" {
		f = append(f, zap.String("tool", Quote(capBytes(r.Tool, MaxToolBytes))))
	}
	str("upstream", r.Upstream)
	if r.Kind == KindCall {
		f = append(f, zap.Array("args", argsMarshaler(r.Args)))
	}
	str("outcome", string(r.Outcome))
	if r.Status != 0 {
		f = append(f, zap.Int("status", r.Status))
	}
	str("reason", r.Reason)
	if r.Kind == KindResult {
		f = append(f,
			zap.Float64("durationMs", float64(r.Duration.Microseconds())/1000),
			zap.Int("resultBytes", r.ResultBytes),
			zap.Int("redactions", r.Redactions),
			zap.Bool("cached", r.Cached),
		)
	}
	str("previousFile", r.PreviousFile)
	if r.PreviousLastSeq != 0 {
		f = append(f, zap.Uint64("previousLastSeq", r.PreviousLastSeq))
	}
	return f
}

type argsMarshaler []Arg

func (a argsMarshaler) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, arg := range a {
		if err := enc.AppendObject(arg); err != nil {
			return err
		}
	}
	return nil
}

func (a Arg) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("name", Quote(capBytes(a.Name, MaxToolBytes)))
	enc.AddString("value", Quote(capBytes(a.Value, MaxArgBytes)))
	if a.Truncated || len(a.Name) > MaxToolBytes || len(a.Value) > MaxArgBytes {
		enc.AddBool("truncated", true)
	}
	return nil
}

// capBytes cuts s to at most n bytes. The cut may split a UTF-8 sequence;
// quoting then writes the stray bytes as \x escapes, so nothing is lost from
// what is kept.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
