package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact"
)

// TestAdvisory_AuditFieldsCutNoSecretInHalf: the audit log's fields were
// redacted in full and then cut by the encoder, so a field that held only
// the start of a secret (the first half of the API key, a GitHub token
// glued to an underscore, which its detector does not take whole) showed
// that start at the cut, and an argument's name was not redacted at all.
// Each field is now redacted before it is cut, and what the log file holds
// shows none of them.
func TestAdvisory_AuditFieldsCutNoSecretInHalf(t *testing.T) {
	t.Parallel()
	apiKey := "tmprl-api-key-0123456789abcdefghijklmnopqr"
	token := "ghp_" + strings.Repeat("a1B2", 9)
	red, _ := redact.New(apiKey)
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(audit.Config{Path: path, Key: []byte(strings.Repeat("k", 64))})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewServer(&fakeReader{}, Options{Namespace: "default", Audit: log, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	h, _ := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	srv := httptest.NewServer(h)
	defer srv.Close()

	ua := http.Header{"User-Agent": {strings.Repeat("x", 230) + " key=" + apiKey[:30] + "/" + strings.Repeat("z", 40)}}
	args, _ := json.Marshal(map[string]string{
		"note": strings.Repeat("a", audit.MaxArgBytes-12) + " " + token + "_ci",
		token:  "a token sent as a key",
	})
	tool := strings.Repeat("t", 115) + " ghp_" + strings.Repeat("Q", 20)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + quoteJSON(tool) + `,"arguments":` + string(args) + `}}`
	post(t, srv.URL+"/mcp", ua, call)
	post(t, srv.URL+"/mcp", ua, "{not json")
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	fields := auditFields(t, path)
	want := []struct{ field, shows string }{
		{"call userAgent", "key=" + redact.PartialMarker},
		{"call tool", "t" + redact.PartialMarker},
		{"call args[0].name", "[REDACTED:github-token]"},
		{"call args[1].name", "note"},
		{"call args[1].value", "a" + redact.PartialMarker},
		{"result tool", "t" + redact.PartialMarker},
		{"denial userAgent", "key=" + redact.PartialMarker},
	}
	for _, w := range want {
		got, ok := fields[w.field]
		if !ok {
			t.Errorf("no %s in the log: %v", w.field, fields)
			continue
		}
		if !strings.HasSuffix(got, w.shows) {
			t.Errorf("%s ends %q, want %q", w.field, got[max(0, len(got)-40):], w.shows)
		}
	}
	for field, v := range fields {
		for _, secret := range []string{"ghp_a1B2", "ghp_QQQQ", apiKey[:8]} {
			if strings.Contains(v, secret) {
				t.Errorf("%s shows %q: %q", field, secret, v[max(0, strings.Index(v, secret)-20):])
			}
		}
	}
}

// auditFields are the untrusted fields of the records in the audit log at
// path, unquoted, by kind and name ("call args[0].value").
func auditFields(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	unquoted := func(name, quoted string) {
		if quoted == "" {
			return
		}
		s, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("%s is not quoted: %s", name, quoted)
		}
		fields[name] = s
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Kind, UserAgent, Tool, Reason string
			Args                          []struct{ Name, Value string }
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		unquoted(rec.Kind+" userAgent", rec.UserAgent)
		unquoted(rec.Kind+" tool", rec.Tool)
		fields[rec.Kind+" reason"] = rec.Reason
		for i, a := range rec.Args {
			unquoted(fmt.Sprintf("%s args[%d].name", rec.Kind, i), a.Name)
			unquoted(fmt.Sprintf("%s args[%d].value", rec.Kind, i), a.Value)
		}
	}
	return fields
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAdvisory_ARefusedKeyShowsNoSecretInHalf: a refusal quotes an unknown
// or repeated key of the body, cut at rpcdecode.MaxQuotedKey bytes; it was
// cut before it was redacted, so a key holding a GitHub token across the
// cut showed the token's start in the answer and in the denial record.
func TestAdvisory_ARefusedKeyShowsNoSecretInHalf(t *testing.T) {
	t.Parallel()
	red, _ := redact.New()
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(audit.Config{Path: path, Key: []byte(strings.Repeat("k", 64))})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewServer(&fakeReader{}, Options{Namespace: "default", Audit: log, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	h, _ := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	srv := httptest.NewServer(h)
	defer srv.Close()

	key := strings.Repeat("a", 240) + " ghp_" + strings.Repeat("a1B2", 9)
	var answers []string
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list",` + quoteJSON(key) + `:1}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + quoteJSON(key) + `:1,` + quoteJSON(key) + `:2}}`,
	} {
		_, answer := post(t, srv.URL+"/mcp", nil, body)
		answers = append(answers, answer)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, where := range append(answers, string(b)) {
		if strings.Contains(where, "ghp_a1B2") {
			t.Errorf("the start of the token shows: %s", where)
		}
	}
	if strings.Count(string(b), "[REDACTED:") != 2 {
		t.Errorf("the denial records do not show the token redacted:\n%s", b)
	}
}

// TestTheAuditRecordHoldsEveryAcceptedArgumentWhole: a call record holds
// the largest argument porthole accepts without cutting it (#18: queries
// were cut at 512 bytes while a query may be 2 KiB).
func TestTheAuditRecordHoldsEveryAcceptedArgumentWhole(t *testing.T) {
	t.Parallel()
	for name, n := range map[string]int{"a page token": policy.MaxPageTokenLen, "a query": policy.MaxQueryLen, "an identifier": policy.MaxIdentifierLen} {
		if n > audit.MaxArgBytes {
			t.Errorf("%s may be %d bytes; a record holds %d of an argument", name, n, audit.MaxArgBytes)
		}
	}
	if policy.MaxPageTokenLen+policy.MaxQueryLen+2*audit.MaxToolBytes > audit.MaxArgsBytes {
		t.Errorf("a list_workflows call's query and page token do not fit the %d bytes a record holds", audit.MaxArgsBytes)
	}
	query := "WorkflowType = '" + strings.Repeat("q", policy.MaxQueryLen-20) + "'"
	a := audit.ArgsFromJSON(json.RawMessage(`{"query":`+quoteJSON(query)+`}`), nil)
	if len(a.Args) != 1 || a.Args[0].Value != query || a.Args[0].Truncated {
		t.Fatalf("a 2 KiB query was recorded as %d bytes, truncated %v", len(a.Args[0].Value), a.Args[0].Truncated)
	}
}
