package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writerLines are lines porthole's writer writes, one of each kind of
// record and every member a record may have, with hostile strings.
func writerLines(t testing.TB) [][]byte {
	t.Helper()
	hostile := "a\u2028b\u0085c\u202Ed\x1b[31me\nf\"g\\h\xff"
	when := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	cp := &Checkpoint{Chain: "c0ffee", Seq: 41, Hash: strings.Repeat("ab", 32), Time: when, KeyID: "0123456789abcdef", Sig: strings.Repeat("cd", 64)}
	records := []Record{
		{Kind: KindChainStart, Reason: "a new audit log", Chain: "c0ffee"},
		callRecord(hostile, hostile, Arg{Name: hostile, Value: hostile, Truncated: true}, Arg{Name: "q", Value: `a = "b"`}),
		{Kind: KindCall, RequestID: "r2", Principal: "bob", Method: "tools/call", Tool: "t", ArgsOmitted: 3, ArgsOmittedSHA256: strings.Repeat("e", 64),
			OAuth: &OAuthCaller{Issuer: "https://login.example.com", Subject: hostile, ClientID: "c", TokenID: "tok"}, TraceID: strings.Repeat("1f", 16)},
		{Kind: KindResult, RequestID: "r1", Principal: "alice", Outcome: OutcomeToolError, Duration: 1234567, ResultBytes: 99, Redactions: 2, Cached: true},
		{Kind: KindDenial, Outcome: OutcomeUnauthenticated, Status: 401, Reason: "la clé \U0001F511 manque\t\x00"},
		{Kind: KindDenials, Count: 7, First: when, Last: when.Add(time.Second), Groups: []DenialGroup{{Outcome: OutcomeDenied, Status: 403, Reason: "no", Count: 5}, {Reason: "x", Count: 2}}},
		{Kind: KindAnchor, PreviousFile: "audit.log.1", PreviousLastSeq: 40, Chain: "c0ffee"},
		{Kind: KindChainStart, Reason: "records 5 to 9 are missing", Chain: "c0ffee", MissingFrom: 5, MissingTo: 9},
		{Kind: KindCheckpoint, Chain: "c0ffee", Checkpoint: cp},
		{Kind: KindPruned, Chain: "c0ffee", Pruned: cp},
		{Kind: KindToolChange, Tool: "t", Upstream: "up", Reason: "changed"},
		{Kind: KindClose},
	}
	l := newLog(Config{Key: testKey, Now: func() time.Time { return when }}, &memSink{}, false, 0, "")
	var lines [][]byte
	for i := range records {
		line := l.encode(&records[i])
		l.seq++
		l.prev = LineHash(line)
		lines = append(lines, bytes.TrimSuffix(line, []byte("\n")))
	}
	return lines
}

// TestTheScannerReadsWhatTheWriterWrites: every kind of record the writer
// writes is read by the scanner, not handed to json.Unmarshal, and read as
// json.Unmarshal reads it; but a string holding a surrogate pair (a
// character beyond the BMP, in a field porthole fills) is json.Unmarshal's.
func TestTheScannerReadsWhatTheWriterWrites(t *testing.T) {
	t.Parallel()
	for _, line := range writerLines(t) {
		var want Entry
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var got Entry
		s := entryScanner{b: line}
		scanned := s.entry(&got) && s.i == len(line)
		if surrogates := bytes.Contains(line, []byte(`\ud83d`)); scanned == surrogates {
			t.Errorf("scanned %v, want %v: %s", scanned, !surrogates, line)
		}
		if scanned && !reflect.DeepEqual(got, want) {
			t.Errorf("%s\nscanned %+v\nwant    %+v", line, got, want)
		}
	}
}

// TestLinesTheScannerDeclinesAreJSONUnmarshals: each line below is not of
// the writer's form; the scanner declines it and json.Unmarshal decides,
// accepting or refusing it as it did before the scanner.
func TestLinesTheScannerDeclinesAreJSONUnmarshals(t *testing.T) {
	t.Parallel()
	const rec = `{"time":"2026-12-01T10:00:00Z","seq":5,"prev":"ab","v":3,"kind":"call","args":[{"name":"a","value":"b"}],"mac":"00"}`
	cases := []struct{ name, line string }{
		{"whitespace between members", strings.Replace(rec, `,"v"`, `, "v"`, 1)},
		{"a key json.Unmarshal matches without regard to case", strings.Replace(rec, `"seq"`, `"Seq"`, 1)},
		{"a key Entry does not have", strings.Replace(rec, `"v":3`, `"x":{"y":[1,null]}`, 1)},
		{"a key given twice", strings.Replace(rec, `"v":3`, `"seq":6`, 1)},
		{"an escaped key", strings.Replace(rec, `"seq"`, `"se\u0071"`, 1)},
		{"a sequence number as a string", strings.Replace(rec, `"seq":5`, `"seq":"5"`, 1)},
		{"a negative sequence number", strings.Replace(rec, `"seq":5`, `"seq":-5`, 1)},
		{"a sequence number with a fraction", strings.Replace(rec, `"seq":5`, `"seq":5.0`, 1)},
		{"a sequence number with an exponent", strings.Replace(rec, `"seq":5`, `"seq":5e0`, 1)},
		{"a sequence number with a leading zero", strings.Replace(rec, `"seq":5`, `"seq":05`, 1)},
		{"a sequence number past 64 bits", strings.Replace(rec, `"seq":5`, `"seq":18446744073709551616`, 1)},
		{"a version that is not an integer", strings.Replace(rec, `"v":3`, `"v":true`, 1)},
		{"a null kind", strings.Replace(rec, `"kind":"call"`, `"kind":null`, 1)},
		{"a null checkpoint", strings.Replace(rec, `"v":3`, `"checkpoint":null`, 1)},
		{"a checkpoint that is an array", strings.Replace(rec, `"v":3`, `"checkpoint":[]`, 1)},
		{"arguments that are an object", strings.Replace(rec, `[{"name":"a","value":"b"}]`, `{}`, 1)},
		{"an argument name that is a number", strings.Replace(rec, `"name":"a"`, `"name":1`, 1)},
		{"a time that is not RFC 3339", strings.Replace(rec, `2026-12-01T10:00:00Z`, `2026-12-01 10:00:00`, 1)},
		{"a time with an escape", strings.Replace(rec, `2026-12-01T10:00:00Z`, `2026-12-01T10:00:00\u005a`, 1)},
		{"a surrogate pair", strings.Replace(rec, `"prev":"ab"`, `"prev":"\ud83d\udd11"`, 1)},
		{"a lone surrogate", strings.Replace(rec, `"prev":"ab"`, `"prev":"\ud83d"`, 1)},
		{"an escape JSON does not have", strings.Replace(rec, `"prev":"ab"`, `"prev":"\x41"`, 1)},
		{"a raw control character", strings.Replace(rec, `"prev":"ab"`, "\"prev\":\"a\tb\"", 1)},
		{"a byte beyond ASCII", strings.Replace(rec, `"prev":"ab"`, "\"prev\":\"a\xc3\xa9\"", 1)},
		{"a byte that is not UTF-8", strings.Replace(rec, `"prev":"ab"`, "\"prev\":\"a\xff\"", 1)},
		{"trailing data", rec + `{}`},
		{"trailing whitespace", rec + ` `},
		{"an unterminated string", `{"mac":"00`},
		{"a missing comma", strings.Replace(rec, `,"v"`, `"v"`, 1)},
		{"a trailing comma", strings.Replace(rec, `,"mac":"00"}`, `,"mac":"00",}`, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var scanned Entry
			s := entryScanner{b: []byte(c.line)}
			if s.entry(&scanned) && s.i == len(c.line) {
				t.Fatalf("the scanner read %s", c.line)
			}
			var got, want Entry
			gotErr, wantErr := decodeEntry([]byte(c.line), &got), json.Unmarshal([]byte(c.line), &want)
			if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeEntry: %v %+v\njson.Unmarshal: %v %+v", gotErr, got, wantErr, want)
			}
		})
	}
}

// FuzzEntryScannerAgreesWithUnmarshal: whatever a line holds, a line the
// scanner reads is one json.Unmarshal accepts, read to the same Entry; and
// decodeEntry accepts what json.Unmarshal accepts, as it reads it.
func FuzzEntryScannerAgreesWithUnmarshal(f *testing.F) {
	for _, line := range writerLines(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"seq":1,"seq":2}`))
	f.Add([]byte(`{"args":[],"groups":[{"count":-0,"status":1e2}],"durationMs":-0.5e-3}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var want Entry
		wantErr := json.Unmarshal(line, &want)
		var scanned Entry
		s := entryScanner{b: line}
		if s.entry(&scanned) && s.i == len(line) {
			if wantErr != nil {
				t.Fatalf("the scanner read what json.Unmarshal refuses (%v): %q", wantErr, line)
			}
			if !reflect.DeepEqual(scanned, want) {
				t.Fatalf("%q\nscanned        %+v\njson.Unmarshal %+v", line, scanned, want)
			}
		}
		var got Entry
		if err := decodeEntry(line, &got); (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeEntry %v %+v, json.Unmarshal %v %+v", line, err, got, wantErr, want)
		}
	})
}

// TestTheScannerKnowsEveryMemberOfEntry: a member Entry gains must be
// taught to the scanner (entryFields), or every line holding it would be
// declined to encoding/json, correct but about twice as slow, with no test
// failing unless one wrote it (found by review).
func TestTheScannerKnowsEveryMemberOfEntry(t *testing.T) {
	et := reflect.TypeFor[Entry]()
	for i := range et.NumField() {
		key, _, _ := strings.Cut(et.Field(i).Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		if _, ok := entryFields[key]; !ok {
			t.Errorf("Entry's %s (%q) is not among entryFields", et.Field(i).Name, key)
		}
	}
}
