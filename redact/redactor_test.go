package redact

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// Samples of every detected kind. None is a real credential.
var samples = map[string]string{
	"jwt":                   "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
	"bearer":                "Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
	"aws-access-key-id":     "AKIAIOSFODNN7EXAMPLE",
	"aws-secret-access-key": "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"github-token":          "ghp_" + strings.Repeat("a1B2", 9),
	"gitlab-token":          "glpat-" + strings.Repeat("x9Y8", 5),
	"slack-token":           "xoxb-1234567890-abcdefghij",
	"private-key":           "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAsecretsecret\n-----END RSA PRIVATE KEY-----",
	"url-credentials":       "postgres://admin:hunter2hunter2@db.internal:5432/orders",
	"porthole-token":        "ph_" + strings.Repeat("Ab3_", 10) + "xyz",
	"basic-auth":            "Authorization: Basic ZGVwbG95Omh1bnRlcjJodW50ZXIy",
	"google-api-key":        "AIza" + strings.Repeat("Sy9-", 8) + "abc",
	"stripe-key":            "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
	"anthropic-key":         "sk-ant-api03-" + strings.Repeat("Ab1_", 10),
	"openai-key":            "sk-proj-" + strings.Repeat("T3Bl", 10) + "bkFJ9x",
	"npm-token":             "npm_" + strings.Repeat("a1B2", 9),
	"sendgrid-key":          "SG." + strings.Repeat("aB3_", 5) + "xy." + strings.Repeat("Zz9-", 10) + "abc",
	"huggingface-token":     "hf_" + strings.Repeat("aBcD", 8) + "eF",
	"digitalocean-token":    "dop_v1_" + strings.Repeat("0123456789abcdef", 4),
	"azure-key":             "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + strings.Repeat("Zm9vYmFy", 11) + "==;EndpointSuffix=core.windows.net",
	"azure-sas":             "https://acct.blob.core.windows.net/c?sv=2022-11-02&sr=c&sig=dGhpcyBpcyBub3QgYSByZWFsIHNpZw%3D%3D",
	"password":              "Server=db;User Id=app;Password=hunter2hunter2;",
}

// secretPart is the part of each sample that must not survive.
func secretPart(kind, sample string) string {
	switch kind {
	case "bearer":
		return strings.TrimPrefix(sample, "Bearer ")
	case "aws-secret-access-key":
		return sample[strings.Index(sample, "=")+1:]
	case "url-credentials":
		return "hunter2hunter2"
	case "private-key":
		return "MIIEpAIBAAKCAQEAsecretsecret"
	case "basic-auth":
		return "ZGVwbG95Omh1bnRlcjJodW50ZXIy"
	case "azure-key":
		return strings.Repeat("Zm9vYmFy", 11)
	case "azure-sas":
		return "dGhpcyBpcyBub3QgYSByZWFsIHNpZw"
	case "password":
		return "hunter2hunter2"
	}
	return sample
}

func TestEveryDetectorRedactsItsKind(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for kind, sample := range samples {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			text := "failure: " + sample + " while charging"
			got, n := r.String(text)
			if n != 1 || strings.Contains(got, secretPart(kind, sample)) || !strings.Contains(got, "[REDACTED:"+kind+"]") {
				t.Fatalf("String(%q) = %q, %d", text, got, n)
			}
			if again, m := r.String(got); again != got || m != 0 {
				t.Fatalf("redacting twice changed %q to %q (%d)", got, again, m)
			}
		})
	}
}

func TestOrdinaryTextIsLeftAlone(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for _, s := range []string{
		"carrier refused the booking", "order-completed-1", "01a22af9-c974-736a-8261-a5884297c08f",
		"the bearer instruments were lost", "https://example.com/path", "ExecutionStatus = 'Running'",
	} {
		if got, n := r.String(s); got != s || n != 0 {
			t.Errorf("String(%q) = %q, %d", s, got, n)
		}
	}
}

func TestExactSecretsAreRedactedWhereverTheyAppear(t *testing.T) {
	t.Parallel()
	r, short := New("tmprl-api-key-0123456789", "short", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n-----END EC PRIVATE KEY-----")
	if len(short) != 1 || short[0] != "short" {
		t.Fatalf("too-short secrets %v, want [short]", short)
	}
	got, n := r.String("key tmprl-api-key-0123456789 and a line MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49 quoted alone")
	if n != 2 || strings.Contains(got, "tmprl-api-key") || strings.Contains(got, "MHcCAQ") {
		t.Fatalf("String = %q, %d", got, n)
	}
}

func TestJSONEscapesHideNothing(t *testing.T) {
	t.Parallel()
	r, _ := New("tmprl-api-key-0123456789")
	cases := map[string]string{
		"a unicode escape":               `{"a":"\u0041KIAIOSFODNN7EXAMPLE"}`,
		"an escaped slash":               `{"url":"postgres:\/\/admin:hunter2hunter2@db"}`,
		"an exact secret escaped":        `{"k":"tmprl\u002dapi-key-0123456789"}`,
		"JSON inside a string":           `{"content":[{"type":"text","text":"{\"message\":\"AKIAIOSFODNN7EXAMPLE\"}"}]}`,
		"doubly escaped inside a string": `{"text":"{\"m\":\"\\u0041KIAIOSFODNN7EXAMPLE\"}"}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, n := r.JSON([]byte(in))
			if n == 0 || !json.Valid(out) {
				t.Fatalf("JSON(%s) = %s, %d", in, out, n)
			}
			var decoded any
			json.Unmarshal(out, &decoded)
			flat := flatten(decoded)
			for _, secret := range []string{"AKIAIOSFODNN7EXAMPLE", "hunter2hunter2", "tmprl-api-key-0123456789"} {
				if strings.Contains(flat, secret) {
					t.Fatalf("%s survived in %s", secret, out)
				}
			}
		})
	}
}

func TestJSONKeepsOrderAndUntouchedBytes(t *testing.T) {
	t.Parallel()
	r, _ := New()
	in := `{"z":1,"a":"AKIAIOSFODNN7EXAMPLE","m":[true,null,"x"],"b":{"c":"d"}}`
	out, n := r.JSON([]byte(in))
	want := `{"z":1,"a":"[REDACTED:aws-access-key-id]","m":[true,null,"x"],"b":{"c":"d"}}`
	if string(out) != want || n != 1 {
		t.Fatalf("JSON = %s (%d), want %s", out, n, want)
	}
	clean := []byte(`{"a":"nothing to see"}`)
	if out, _ := r.JSON(clean); &out[0] != &clean[0] {
		t.Fatal("a clean document was copied; the fast path should return it as is")
	}
}

// flatten returns every string in a decoded JSON value, decoding strings that
// hold JSON, so a search sees through every layer.
func flatten(v any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				b.WriteString(k + "\n")
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			b.WriteString(x + "\n")
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				walk(inner)
			}
		}
	}
	walk(v)
	return b.String()
}

// FuzzRedactJSON: a secret inserted at a random place in random JSON never
// survives, however the JSON is escaped; redacting twice equals redacting
// once; the output is valid JSON no more than three times the input's size.
func FuzzRedactJSON(f *testing.F) {
	f.Add(`{"a":"b"}`, uint8(0), uint16(0), true)
	f.Add(`["x",{"y":[1,2,"z"]}]`, uint8(3), uint16(5), false)
	f.Add(`"just a string"`, uint8(7), uint16(2), true)
	kinds := make([]string, 0, len(samples))
	for k := range samples {
		kinds = append(kinds, k)
	}
	r, _ := New("exact-secret-value-1234")
	f.Fuzz(func(t *testing.T, doc string, which uint8, at uint16, escape bool) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		secret := "exact-secret-value-1234"
		if int(which)%(len(kinds)+1) < len(kinds) {
			k := kinds[int(which)%(len(kinds)+1)]
			secret = samples[k]
		}
		v = plant(v, " "+secret+" ", int(at))
		in, _ := json.Marshal(v)
		if escape {
			in = escapeAll(in)
			if !json.Valid(in) {
				t.Fatalf("the test's escaping broke %s", in)
			}
		}
		out, _ := r.JSON(in)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %s: %s", in, out)
		}
		if len(out) > 3*len(in)+64 {
			t.Fatalf("output of %d bytes from %d", len(out), len(in))
		}
		var decoded any
		json.Unmarshal(out, &decoded)
		part := secret
		for k, s := range samples {
			if s == secret {
				part = secretPart(k, s)
			}
		}
		if strings.Contains(flatten(decoded), part) {
			t.Fatalf("secret %q survived: %s -> %s", part, in, out)
		}
		if again, n := r.JSON(out); string(again) != string(out) || n != 0 {
			t.Fatalf("redacting twice changed the output")
		}
	})
}

// plant puts s into the at'th string of v, or wraps v with it.
func plant(v any, s string, at int) any {
	count := 0
	var walk func(v any) (any, bool)
	walk = func(v any) (any, bool) {
		switch x := v.(type) {
		case string:
			if count == at {
				count++
				return x + s, true
			}
			count++
		case []any:
			for i := range x {
				if nv, ok := walk(x[i]); ok {
					x[i] = nv
					return x, true
				}
			}
		case map[string]any:
			for k := range x {
				if nv, ok := walk(x[k]); ok {
					x[k] = nv
					return x, true
				}
			}
		}
		return v, false
	}
	if nv, ok := walk(v); ok {
		return nv
	}
	return []any{v, s}
}

// escapeAll writes every letter inside string literals as a \u escape and
// every slash as \/, leaving existing escapes whole.
func escapeAll(b []byte) []byte {
	var out strings.Builder
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\':
			n := 2
			if i+1 < len(b) && b[i+1] == 'u' {
				n = 6
			}
			out.Write(b[i:min(len(b), i+n)])
			i += n - 1
		case c == '"':
			in = !in
			out.WriteByte(c)
		case in && (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'):
			out.WriteString(`\u00` + hex2(c))
		case in && c == '/':
			out.WriteString(`\/`)
		default:
			out.WriteByte(c)
		}
	}
	return []byte(out.String())
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

func BenchmarkRedactJSON(b *testing.B) {
	benchRedactJSON(b, "tmprl-api-key-0123456789")
}

// BenchmarkRedactJSONWithAClientKey: with mTLS, the client key (a PEM,
// lines apart) is an exact secret; a secret a document may hold only
// escaped used to send every document with a backslash (every tool result,
// whose text content quotes its JSON) down the slow path.
func BenchmarkRedactJSONWithAClientKey(b *testing.B) {
	benchRedactJSON(b, "tmprl-api-key-0123456789",
		"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nVJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDu\n-----END PRIVATE KEY-----")
}

func benchRedactJSON(b *testing.B, secrets ...string) {
	r, _ := New(secrets...)
	rng := rand.New(rand.NewSource(1))
	var items []map[string]any
	for i := 0; i < 40; i++ {
		items = append(items, map[string]any{
			"workflowId": "order-" + strings.Repeat("x", rng.Intn(20)), "status": "Running",
			"message": map[string]string{"text": "carrier refused the booking", "origin": "porthole-quoting-temporal"},
		})
	}
	inner, _ := json.Marshal(map[string]any{"workflows": items})
	// As a tool result carries it: structured, and quoted as text.
	doc, _ := json.Marshal(map[string]any{"structuredContent": json.RawMessage(inner), "content": []any{map[string]string{"type": "text", "text": string(inner)}}})
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		r.JSON(doc)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(float64(len(doc))/1024), "ns/KiB")
}

func TestDocHintsCoverEveryDetector(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for kind, sample := range samples {
		if !r.docMayHoldSecret([]byte(`{"a":"` + sample + `"}`)) {
			t.Errorf("the document fast path would skip a %s", kind)
		}
		upper := strings.ToUpper(sample)
		if got, n := r.String(upper); n > 0 && !r.docMayHoldSecret([]byte(upper)) {
			t.Errorf("the fast path skips %q, which String redacts to %q", upper, got)
		}
	}
}

func TestMarkersKeepTheFastPathButCannotHideASecret(t *testing.T) {
	t.Parallel()
	r, _ := New()
	clean := []byte(`{"m":"failed: Bearer [REDACTED:bearer] key [REDACTED:aws-secret-access-key] and [REDACTED:secret]"}`)
	if r.docMayHoldSecret(clean) {
		t.Error("porthole's own markers send an answer down the slow path")
	}
	for _, sneaky := range []string{
		`{"m":"[REDACTED:x AKIAIOSFODNN7EXAMPLE"}`,
		`{"m":"[REDACTED:bearer] bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0"}`,
		`{"m":"Bearer [REDACTED:bearer] Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0"}`,
		`{"m":"[REDACTED:aws-secret_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY]"}`,
	} {
		out, _ := r.JSON([]byte(sneaky))
		if strings.Contains(string(out), "AKIAIOSFODNN7EXAMPLE") || strings.Contains(string(out), "9f8e7d6c5b4a39281706f5e4d3c2b1a0") || strings.Contains(string(out), "wJalrXUtnFEMI") {
			t.Errorf("a fake marker hid a secret: %s -> %s", sneaky, out)
		}
	}
}

// TestAdvisory_MadeUpMarkerHidesNoToken: the fast path skips hints inside
// porthole's own markers; a closed marker naming a kind porthole never
// writes, made of lowercase letters and dashes like a Slack or GitLab token,
// must not hide that token.
func TestAdvisory_MadeUpMarkerHidesNoToken(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for _, token := range []string{"xoxb-abcdefghijkl", "glpat-abcdefghijklmnopqrstu"} {
		doc := `{"m":"[REDACTED:` + token + `]"}`
		if out, n := r.JSON([]byte(doc)); n == 0 || strings.Contains(string(out), token) {
			t.Errorf("JSON(%s) = %s, %d", doc, out, n)
		}
		if out, n := r.String(doc); n == 0 || strings.Contains(out, token) {
			t.Errorf("String(%s) = %s, %d", doc, out, n)
		}
	}
}

func TestEscapesBeyondASCIIKeepTheFastPath(t *testing.T) {
	t.Parallel()
	r, _ := New("tmprl-api-key-0123456789")
	for _, doc := range []string{
		`{"identity":"worker\u202e\u200b"}`,             // an identifier's hidden characters, escaped
		`{"identity":"worker\\u202E\\u200B"}`,           // the same, shown as visible escapes
		`{"text":"{\"identity\":\"worker\\\\u202E\"}"}`, // and inside a text content
		`{"emoji":"\ud83d\ude00"}`,
	} {
		if r.docMayHoldSecret([]byte(doc)) {
			t.Errorf("%s takes the slow path", doc)
		}
	}
}

func TestEscapesThatCouldHideAHintTakeTheSlowPath(t *testing.T) {
	t.Parallel()
	nonASCII, _ := New("pässwort-geheim-1234")
	cases := []struct {
		name string
		r    *Redactor
		doc  string
	}{
		{"an ASCII letter", nil, `{"a":"\u0041KIAIOSFODNN7EXAMPLE"}`},
		{"an ASCII letter one level down", nil, `{"t":"{\"a\":\"\\u0041KIAIOSFODNN7EXAMPLE\"}"}`},
		{"a backslash that makes an escape one level down", nil, `{"t":"{\"a\":\"\u005cu0041KIAIOSFODNN7EXAMPLE\"}"}`},
		{"a letter u that makes an escape one level down", nil, `{"t":"{\"a\":\"\\\u00750041KIAIOSFODNN7EXAMPLE\"}"}`},
		{"a hex digit escaped one level down", nil, `{"t":"{\"a\":\"\\u\u0030041KIAIOSFODNN7EXAMPLE\"}"}`},
		{"a non-ASCII exact secret", nonASCII, `{"a":"p\u00e4sswort-geheim-1234"}`},
	}
	for _, c := range cases {
		r := c.r
		if r == nil {
			r, _ = New()
		}
		if !r.docMayHoldSecret([]byte(c.doc)) {
			t.Errorf("%s: %s keeps the fast path", c.name, c.doc)
		}
		if out, n := r.JSON([]byte(c.doc)); n == 0 {
			t.Errorf("%s: JSON(%s) = %s, nothing redacted", c.name, c.doc, out)
		}
	}
}

// FuzzFastPathSkipsNothing: when the fast path passes a document, no string
// in it, at any depth of JSON nesting, holds anything the detectors or the
// exact secrets would replace; and when it passes a text, String has nothing
// to replace in it.
func FuzzFastPathSkipsNothing(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Add(`{"m":"failed: Bearer [REDACTED:bearer] key [REDACTED:aws-secret-access-key]"}`)
	f.Add(`{"t":"{\"a\":\"\\u0041KIAIOSFODNN7EXAMPLE\"}"}`)
	f.Add(`{"identity":"worker\u202e","k":"tmprl\u002dapi-key-0123456789"}`)
	f.Add(`[REDACTED:xoxb-abcdefghijkl]`)
	f.Add(`{"k":"pass\"word-0123456789","pem":"line one\nMIIEvQIBADANBgkqhkiG9w0\n","u":"s\u00e9cret-0123456789"}`)
	// One printable secret; secrets a document may hold only escaped, with
	// a probe (a quote, a PEM key's newlines, a character beyond ASCII);
	// and ones too short in plain runs to have one.
	redactors := []*Redactor{}
	for _, secrets := range [][]string{
		{"tmprl-api-key-0123456789"},
		{`pass"word-0123456789`, "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0\n-----END KEY-----", "sécret-0123456789"},
		{`a"b\c"d\e"f`, "é1234567é"},
	} {
		r, _ := New(secrets...)
		redactors = append(redactors, r)
	}
	// And with the personal-data detectors, alone and beside a secret.
	redactors = append(redactors, redactors[0].WithPersonal(PersonalKinds...), (*Redactor)(nil).WithPersonal(PersonalKinds...))
	for _, c := range personalCorpus {
		for _, text := range append(c.found, c.passed...) {
			f.Add(`{"t":"` + strings.NewReplacer("[", "", "]", "").Replace(text) + `"}`)
		}
	}
	f.Add(`{"t":"x\n4111111111111111","n":4111111111111111,"e":"a\tb@example.com\fGB82WEST12345698765432"}`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range redactors {
			if !mayHold(r, s) {
				if out, n := r.replace(s); n != 0 {
					t.Fatalf("the fast path passed %q, which String redacts to %q", s, out)
				}
			}
			if !json.Valid([]byte(s)) || r.docMayHoldSecret([]byte(s)) {
				continue
			}
			var v any
			json.Unmarshal([]byte(s), &v)
			for _, x := range strings.Split(flatten(v), "\n") {
				if out, n := r.replace(x); n != 0 {
					t.Fatalf("the fast path passed %s, which holds %q, redacted to %q", s, x, out)
				}
			}
		}
	})
}

// FuzzDetectorsMatchOnlyAtTheirStarts: a detector that runs its regexp only
// where one of its starts occurs finds exactly the matches the regexp finds
// along the whole text; and the fold hints' search finds what
// strings.EqualFold finds.
func FuzzDetectorsMatchOnlyAtTheirStarts(f *testing.F) {
	for _, s := range samples {
		f.Add("x" + s + " and _" + s + "." + strings.ToLower(s))
	}
	f.Add("Authorization: BEARER abc.def-123 bearer\tbearer 12345678== xbearer 123456789")
	f.Add("AKIAIOSFODNN7EXAMPLEAKIAIOSFODNN7EXAMPL2 ASIAIOSFODNN7EXAMPLE")
	f.Add("eyJeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwb3J0aG9sZSJ9.cG9ydGhvbGUtc2VlZGVyLXNpZ25hdHVyZQ")
	f.Add("ſecret SECRET bEaReR \u212aey")
	f.Add("aws_secret_access_key = \n\t'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' AWS_ſecret_acceſſ_\u212aey:\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYx secret_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	f.Fuzz(func(t *testing.T, s string) {
		for _, sub := range []string{"bearer", "secret"} {
			want := -1
			for i := 0; i+len(sub) <= len(s); i++ {
				if strings.EqualFold(s[i:i+len(sub)], sub) {
					want = i
					break
				}
			}
			if got := indexFold(s, sub); got != want {
				t.Fatalf("indexFold(%q, %q) = %d, strings.EqualFold finds %d", s, sub, got, want)
			}
		}
		for _, d := range detectors {
			mark := func(m string) string { return "<" + m + ">" }
			if got, want := d.replaceAll(s, mark), d.re.ReplaceAllStringFunc(s, mark); got != want {
				t.Fatalf("%s in %q: %q, the regexp along the whole text %q", d.kind, s, got, want)
			}
		}
	})
}

// An exact secret with a character JSON escapes (a quote, a backslash, a
// newline) appears in a document only escaped; the fast path's byte search
// for it used to miss it there, and the document went out unredacted.
func TestExactSecretsThatJSONEscapesAreRedacted(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{`pass"word-0123`, `back\slash-0123`, "tab\tbed-0123456"} {
		r, _ := New(secret)
		doc, _ := json.Marshal(map[string]string{"m": "the key is " + secret + " ok"})
		out, n := r.JSON(doc)
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if n != 1 || strings.Contains(back["m"], secret) {
			t.Errorf("secret %q in %s: %d redactions, %s", secret, doc, n, out)
		}
	}
}

// The aws-secret detector's (?i) regexp matches a long s (U+017F) for s and
// the Kelvin sign for k; its fast-path hint must find those spellings too.
func TestFoldedSpellingsOfTheAWSSecretHintTakeTheSlowPath(t *testing.T) {
	t.Parallel()
	r, _ := New()
	const key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	for _, text := range []string{"aws_\u017fecret_access_key=" + key, "aws_secret_access_\u212aey=" + key} {
		for _, doc := range [][]byte{[]byte(`{"m":"` + text + `"}`), mustMarshal(t, map[string]string{"m": text})} {
			if out, _ := r.JSON(doc); strings.Contains(string(out), key) {
				t.Errorf("%s went out as %s", doc, out)
			}
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkRedactAnswer12KiB is the cost per KiB of redacting a 12 KiB
// list_workflows answer as a tool result carries it, clean and holding
// secrets (an exact secret, a token, URL credentials), with an exact
// Temporal API key configured: the figures docs/performance.md compares.
func BenchmarkRedactAnswer12KiB(b *testing.B) {
	const apiKey = "tmprl-api-key-0123456789abcdef"
	for _, c := range []struct {
		name    string
		secrets []string
	}{
		{"clean", nil},
		{"secrets", []string{apiKey, samples["github-token"], samples["url-credentials"], samples["jwt"]}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r, _ := New(apiKey)
			doc := answer12KiB(c.secrets)
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				r.JSON(doc)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N)/(float64(len(doc))/1024), "µs/KiB")
		})
	}
}

// answer12KiB is a list_workflows answer of about 12 KiB, structured and
// quoted as text, with each of secrets in one workflow's message.
func answer12KiB(secrets []string) []byte {
	rng := rand.New(rand.NewSource(1))
	var items []map[string]any
	for i := 0; len(items) < 200; i++ {
		text := "carrier refused the booking"
		if i < len(secrets) {
			text = "carrier said " + secrets[i]
		}
		items = append(items, map[string]any{
			"workflowId": "order-" + strings.Repeat("x", rng.Intn(20)), "runId": "01a22af9-c974-736a-8261-a5884297c08f", "status": "Running",
			"message": map[string]string{"text": text, "origin": "porthole-quoting-temporal"},
		})
		inner, _ := json.Marshal(map[string]any{"workflows": items})
		if len(inner) > 5500 {
			break
		}
	}
	inner, _ := json.Marshal(map[string]any{"workflows": items})
	doc, _ := json.Marshal(map[string]any{"structuredContent": json.RawMessage(inner), "content": []any{map[string]string{"type": "text", "text": string(inner)}}})
	return doc
}

func TestTheBenchmarkAnswerIsAbout12KiB(t *testing.T) {
	t.Parallel()
	for _, secrets := range [][]string{nil, {"x"}} {
		if n := len(answer12KiB(secrets)); n < 11*1024 || n > 13*1024 {
			t.Errorf("the benchmark's answer is %d bytes", n)
		}
	}
}
