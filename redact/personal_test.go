package redact

import (
	"strings"
	"testing"
)

// personalCorpus holds, for each kind, texts it must redact (the part in
// brackets) and texts it must leave alone: the false positives that look
// most like the real thing.
var personalCorpus = map[string]struct{ found, passed []string }{
	PersonalEmail: {
		found: []string{
			"mail [alice@example.com] now", "[first.last+tag@mail.example.co.uk].", "<[a_b-c%d@sub-domain.example.org]>",
			"to:[x@y.io]", `"[ops@bank.example]"`,
		},
		passed: []string{
			"12345@worker-host", "user@localhost", "pid@10.0.0.1", "a@b.c", "@handle", "name@", "x@",
			"foo@bar..com", "email me at alice at example dot com",
		},
	},
	PersonalPhone: {
		found: []string{
			"call [+44 20 7946 0958] today", "[+1-202-555-0143]", "[+49 (0)30 123456]", "[(202) 555-0143]", "tel [202-555-0143].",
			"[202.555.0143]", "[+33123456789]",
		},
		passed: []string{
			"v1.2.3", "10.0.19045.2965", "2026-12-01 10:11:12.123", "2026-12-01T10:11:12Z", "192.168.100.123", "order 1234567890",
			"+1 day", "+12345", "build 202-555", "202-555.0143", "ratio 1:202-555-0143x", "0x202-555-0143", "id 123-456-7890",
			"1733476800000000000", "+0 44 20 7946 0958",
		},
	},
	PersonalIBAN: {
		found: []string{
			"pay [DE89370400440532013000] now", "[GB82 WEST 1234 5698 7654 32]", "IBAN: [FR1420041010050500013M02606].",
			"[NL91ABNA0417164300]",
		},
		passed: []string{
			"DE89370400440532013001", "GB82 WEST 1234 5698 7654 33", "AB12", "XX00 0000 0000 0000 00", "ID12345678901234567",
			"TX01HQZ3JY8M4PQRSTUVWX", "deDE89370400440532013000", "DE89370400440532013000X",
		},
	},
	PersonalCard: {
		found: []string{
			"card [4111111111111111] declined", "[4111 1111 1111 1111]", "[5500-0000-0000-0004].", "[340000000000009]",
			"[6011000990139424]", "[2223000048400011]",
		},
		passed: []string{
			"4111111111111112", "4111 1111 1111 1112", "1733476800000000000", "1234567890123", "order-4111111111111111",
			"v4111111111111111", "4111111111111111.5", "41111111111111111111", "4111 11111111 1111 1", "4111-1111 1111-1111",
			"2026-12-01T10:11:12.123456789Z", "9111111111111111",
		},
	},
}

// TestPersonalDataDetectorsFindTheirsAndNothingElse: each detector, on,
// redacts what its corpus brackets and nothing else; off, redacts nothing
// of it.
func TestPersonalDataDetectorsFindTheirsAndNothingElse(t *testing.T) {
	t.Parallel()
	on := withAKey(t).WithPersonal(PersonalKinds...)
	off := withAKey(t)
	for kind, c := range personalCorpus {
		for _, text := range c.found {
			plain := strings.NewReplacer("[", "", "]", "").Replace(text)
			want := text[:strings.Index(text, "[")] + marker(kind) + text[strings.Index(text, "]")+1:]
			if got, n := on.String(plain); got != want || n != 1 {
				t.Errorf("%s: String(%q) = %q, %d; want %q", kind, plain, got, n, want)
			}
			if got, _ := off.String(plain); got != plain {
				t.Errorf("%s off: String(%q) = %q", kind, plain, got)
			}
			doc := []byte(`{"t":` + quoteJSON(plain) + `}`)
			if got, n := on.JSON(doc); n != 1 || strings.Contains(string(got), plain) {
				t.Errorf("%s: JSON(%s) = %s, %d", kind, doc, got, n)
			}
		}
		for _, text := range c.passed {
			if got, n := on.String(text); got != text || n != 0 {
				t.Errorf("%s: String(%q) = %q, %d; want it left alone", kind, text, got, n)
			}
		}
	}
}

// TestPersonalDataRedactedTwiceIsRedactedOnce: markers hold nothing a
// personal-data detector finds.
func TestPersonalDataRedactedTwiceIsRedactedOnce(t *testing.T) {
	t.Parallel()
	r := withAKey(t).WithPersonal(PersonalKinds...)
	var all []string
	for _, c := range personalCorpus {
		for _, text := range c.found {
			all = append(all, strings.NewReplacer("[", "", "]", "").Replace(text))
		}
	}
	once, _ := r.String(strings.Join(all, "\n"))
	if twice, n := r.String(once); twice != once || n != 0 {
		t.Errorf("redacted again: %d more", n)
	}
}

func TestParsePersonal(t *testing.T) {
	t.Parallel()
	if got, err := ParsePersonal(" Email,card,,email "); err != nil || strings.Join(got, ",") != "email,card" {
		t.Errorf("ParsePersonal = %v, %v", got, err)
	}
	if _, err := ParsePersonal("email,ssn"); err == nil || !strings.Contains(err.Error(), `"ssn"`) || !strings.Contains(err.Error(), "email, iban, card, phone") {
		t.Errorf("an unknown kind: %v", err)
	}
}

func withAKey(t *testing.T) *Redactor {
	t.Helper()
	r, _ := New("tmprl-api-key-0123456789abcdef")
	return r
}

func quoteJSON(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestACutLeavesNoFirstPartOfPersonalData: a text that ends in the first
// part of an address, a card number, a phone number or an IBAN has that
// part found as a partial, and a cut through one keeps none of it.
func TestACutLeavesNoFirstPartOfPersonalData(t *testing.T) {
	t.Parallel()
	r := withAKey(t).WithPersonal(PersonalKinds...)
	for _, c := range []struct{ before, datum string }{
		{"mail ", "alice.smith@example.com"},
		{"card ", "4111 1111 1111 1111"},
		{"call ", "+44 20 7946 0958"},
		{"pay ", "GB82 WEST 1234 5698 7654 32"},
	} {
		text := c.before + c.datum
		if i := r.TrailingPartial(text[:len(text)-4]); i != len(c.before) {
			t.Errorf("TrailingPartial(%q) = %d, want %d", text[:len(text)-4], i, len(c.before))
		}
		for n := len(c.before) + 1; n < len(text); n++ {
			if out, _, _ := r.Cut(text, n); strings.Contains(out, c.datum[:4]) {
				t.Errorf("Cut(%q, %d) = %q", text, n, out)
			}
		}
	}
}

// TestACardNumberIsFoundAsAJSONNumberAndAfterAnEscape: in JSON, the card
// detector reads numbers as well as strings, and a number after an escape
// (\n, \t) begins a word, as the decoded text has it.
func TestACardNumberIsFoundAsAJSONNumberAndAfterAnEscape(t *testing.T) {
	t.Parallel()
	r := withAKey(t).WithPersonal(PersonalCard)
	for doc, want := range map[string]string{
		`{"n":4111111111111111}`:             `{"n":"[REDACTED:card]"}`,
		`[4111111111111111, 2]`:              `["[REDACTED:card]", 2]`,
		`{"n":4111111111111111.5}`:           `{"n":4111111111111111.5}`,
		`{"n":1733476800000000000}`:          `{"n":1733476800000000000}`,
		`{"t":"line\n4111111111111111"}`:     `{"t":"line\n[REDACTED:card]"}`,
		`{"t":"col\t4111 1111 1111 1111\r"}`: `{"t":"col\t[REDACTED:card]\r"}`,
		`{"t":"word4111111111111111"}`:       `{"t":"word4111111111111111"}`,
		`{"t":"a\\n4111111111111111 plain"}`: `{"t":"a\\n[REDACTED:card] plain"}`,
		`{"jsonrpc":"2.0","id":4111111111111111,"result":{"id":4111111111111111}}`: `{"jsonrpc":"2.0","id":4111111111111111,"result":{"id":"[REDACTED:card]"}}`,
		`{"jsonrpc":"2.0","id" : 4111111111111111}`:                                `{"jsonrpc":"2.0","id" : 4111111111111111}`,
		`[{"id":4111111111111111}]`:                                                `[{"id":"[REDACTED:card]"}]`,
	} {
		if got, _ := r.JSON([]byte(doc)); string(got) != want {
			t.Errorf("JSON(%s) = %s, want %s", doc, got, want)
		}
	}
}

// TestPersonalDataAfterAUnicodeEscapeIsFound: an escape of a character
// beyond ASCII (a no-break space) before a number or an IBAN begins a word,
// as the decoded text has it.
func TestPersonalDataAfterAUnicodeEscapeIsFound(t *testing.T) {
	t.Parallel()
	r := withAKey(t).WithPersonal(PersonalKinds...)
	for _, doc := range []string{
		`{"a":"Karte:\u00a04111 1111 1111 1111"}`,
		`{"a":"IBAN\u00a0DE89370400440532013000"}`,
		`{"a":"Tel.\u00a0+44 20 7946 0958"}`,
	} {
		if got, n := r.JSON([]byte(doc)); n != 1 {
			t.Errorf("JSON(%s) = %s, %d redactions", doc, got, n)
		}
	}
}
