package audit

import (
	"bytes"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The record encoding as it was first written, with zap's JSON encoder:
// the reference FuzzRecordEncodingAgreesWithZap holds the hand-written
// encoder to, so that the log's format stays what docs/audit.md describes.

var referenceEncoderConfig = zapcore.EncoderConfig{
	LineEnding:     "\n",
	EncodeDuration: zapcore.MillisDurationEncoder,
	EncodeTime:     zapcore.RFC3339NanoTimeEncoder,
}

func referenceBody(now time.Time, seq uint64, prev string, r *Record) []byte {
	f := []zap.Field{
		zap.String("time", now.UTC().Format(time.RFC3339Nano)),
		zap.Uint64("seq", seq),
		zap.String("prev", prev),
		zap.Int("v", SchemaVersion),
		zap.String("kid", KeyID(testKey)),
		zap.String("kind", string(r.Kind)),
	}
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
	if r.ClientCert != "" {
		f = append(f, zap.String("clientCert", Quote(capBytes(r.ClientCert, MaxUserAgentBytes))))
	}
	str("transport", r.Transport)
	if r.UserAgent != "" {
		f = append(f, zap.String("userAgent", Quote(capBytes(r.UserAgent, MaxUserAgentBytes))))
	}
	str("method", r.Method)
	if r.Tool != "" {
		f = append(f, zap.String("tool", Quote(capBytes(r.Tool, MaxToolBytes))))
	}
	str("upstream", r.Upstream)
	if o := r.OAuth; o != nil {
		f = append(f, zap.Object("oauth", zapcore.ObjectMarshalerFunc(func(e zapcore.ObjectEncoder) error {
			e.AddString("issuer", Quote(capBytes(o.Issuer, MaxToolBytes*2)))
			e.AddString("subject", Quote(capBytes(o.Subject, MaxToolBytes)))
			e.AddString("clientId", Quote(capBytes(o.ClientID, MaxToolBytes)))
			e.AddString("tokenId", Quote(capBytes(o.TokenID, MaxToolBytes)))
			return nil
		})))
	}
	if r.Kind == KindCall {
		f = append(f, zap.Array("args", referenceArgs(r.Args)))
		if r.ArgsOmitted > 0 {
			f = append(f, zap.Int("argsOmitted", r.ArgsOmitted))
			str("argsOmittedSha256", r.ArgsOmittedSHA256)
		}
	}
	str("outcome", string(r.Outcome))
	if r.Status != 0 {
		f = append(f, zap.Int("status", r.Status))
	}
	str("reason", capBytes(r.Reason, MaxReasonBytes))
	if r.Kind == KindResult {
		f = append(f,
			zap.Float64("durationMs", float64(r.Duration.Microseconds())/1000),
			zap.Int("resultBytes", r.ResultBytes),
			zap.Int("redactions", r.Redactions),
			zap.Bool("cached", r.Cached),
		)
		if r.Profile != "" {
			str("profile", Quote(capBytes(r.Profile, MaxToolBytes)))
		}
		if len(r.Opened) > 0 {
			f = append(f, zap.Array("opened", referenceArgs(r.Opened)))
		}
	}
	if r.Kind == KindDenials {
		f = append(f, zap.Int("count", r.Count))
		str("first", r.First.UTC().Format(time.RFC3339Nano))
		str("last", r.Last.UTC().Format(time.RFC3339Nano))
		f = append(f, zap.Array("groups", referenceGroups(r.Groups)))
	}
	str("previousFile", r.PreviousFile)
	if r.PreviousLastSeq != 0 {
		f = append(f, zap.Uint64("previousLastSeq", r.PreviousLastSeq))
	}
	str("chain", r.Chain)
	if r.MissingTo != 0 {
		f = append(f, zap.Uint64("missingFrom", r.MissingFrom), zap.Uint64("missingTo", r.MissingTo))
	}
	if r.Checkpoint != nil {
		f = append(f, zap.Object("checkpoint", zapcore.ObjectMarshalerFunc(func(o zapcore.ObjectEncoder) error {
			o.AddString("chain", r.Checkpoint.Chain)
			o.AddUint64("seq", r.Checkpoint.Seq)
			o.AddString("hash", r.Checkpoint.Hash)
			o.AddString("time", r.Checkpoint.Time.Format(time.RFC3339Nano))
			o.AddString("kid", r.Checkpoint.KeyID)
			o.AddString("sig", r.Checkpoint.Sig)
			return nil
		})))
	}
	buf, err := zapcore.NewJSONEncoder(referenceEncoderConfig).EncodeEntry(zapcore.Entry{}, f)
	if err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

type referenceArgs []Arg

func (a referenceArgs) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, arg := range a {
		if err := enc.AppendObject(referenceArg(arg)); err != nil {
			return err
		}
	}
	return nil
}

type referenceGroups []DenialGroup

func (gs referenceGroups) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, g := range gs {
		if err := enc.AppendObject(zapcore.ObjectMarshalerFunc(func(o zapcore.ObjectEncoder) error {
			o.AddInt("count", g.Count)
			if g.Outcome != "" {
				o.AddString("outcome", string(g.Outcome))
			}
			if g.Status != 0 {
				o.AddInt("status", g.Status)
			}
			if g.Reason != "" {
				o.AddString("reason", capBytes(g.Reason, MaxReasonBytes))
			}
			return nil
		})); err != nil {
			return err
		}
	}
	return nil
}

type referenceArg Arg

func (a referenceArg) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("name", Quote(capBytes(a.Name, MaxToolBytes)))
	enc.AddString("value", Quote(capBytes(a.Value, MaxArgBytes)))
	if a.Truncated || len(a.Name) > MaxToolBytes || len(a.Value) > MaxArgBytes {
		enc.AddBool("truncated", true)
	}
	return nil
}

// FuzzRecordEncodingAgreesWithZap: for every kind of record, with any
// client-sent strings and any printable-ASCII trusted fields (porthole's
// own words), the encoder writes byte for byte what zap's JSON encoder
// wrote, and so the same HMAC'd line.
func FuzzRecordEncodingAgreesWithZap(f *testing.F) {
	f.Add(uint8(0), "alice", "describe_workflow", "workflowId", "order-1", "curl/8", "r1", "refused\t\"x\"\\", int64(1234567), 42, true)
	f.Add(uint8(1), "", "", "", "\u2028\xff", "\x1b[2J", "", "", int64(0), 0, false)
	f.Add(uint8(8), "carol", "list_workflows", "q", "x", "ua", "0123abcd", "ok", int64(99), 7, false)
	f.Add(uint8(2), "bob", "\u202e", "é", "\"}", "", "id", "Host not allowed", int64(-5), 403, false)
	kinds := []Kind{KindCall, KindResult, KindDenial, KindChainStart, KindAnchor, KindClose, KindToolChange, KindDenials, KindCheckpoint}
	f.Fuzz(func(t *testing.T, kind uint8, principal, tool, argName, argValue, ua, requestID, reason string, micros int64, n int, flag bool) {
		if !isASCII(requestID) || !isASCII(reason) {
			return
		}
		rec := Record{
			Kind: kinds[int(kind)%len(kinds)], RequestID: requestID, Principal: principal, ClientAddr: "10.0.0.1", ClientCert: ua,
			Transport: "http", UserAgent: ua, Method: "tools/call", Tool: tool, Upstream: requestID, Args: []Arg{{Name: argName, Value: argValue, Truncated: flag}, {Name: "b", Value: ""}},
			Outcome: OutcomeOK, Status: n, Reason: reason, Duration: time.Duration(micros) * time.Microsecond,
			ResultBytes: n, Redactions: n / 2, Cached: flag, PreviousFile: reason, PreviousLastSeq: uint64(n), Profile: tool, Opened: []Arg{{Name: argName, Value: argValue}},
			ArgsOmitted: n % 3, ArgsOmittedSHA256: requestID,
			Count: n, First: time.Unix(int64(n), 0), Last: time.Unix(int64(n), micros%1e9),
			Groups: []DenialGroup{{Outcome: OutcomeUnauthenticated, Status: 401, Reason: reason, Count: n}, {Reason: requestID, Count: 1}},
		}
		if flag {
			rec.Args = nil
		}
		if flag && principal != "" {
			rec.OAuth = &OAuthCaller{Issuer: "https://login.example.com", Subject: principal, ClientID: tool, TokenID: argValue}
		}
		if isHex(requestID) {
			// The writer's own fields: hex, numbers and a time.
			rec.Chain, rec.MissingFrom, rec.MissingTo = requestID, uint64(n), uint64(n)
			rec.Checkpoint = &Checkpoint{Chain: requestID, Seq: uint64(n), Hash: requestID, Time: time.Unix(int64(n), micros%1e9).UTC(), KeyID: requestID, Sig: requestID}
		}
		now := time.Unix(1764486000, micros%1e9).In(time.FixedZone("x", 3600))
		l := newLog(Config{Key: testKey, Now: func() time.Time { return now }}, &memSink{}, false, 6, "abc")
		got := l.encode(&rec)
		want := seal(l.mac, referenceBody(now, 7, "abc", &rec))
		if !bytes.Equal(got, want) {
			t.Fatalf("encoded\n%s\nzap wrote\n%s", got, want)
		}
	})
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
