package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/oauth/oidctest"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// profilesPolicy gives the static principal "vendor" a profile that
// withholds free text and worker identities, "pii" one that keeps free
// text but runs the e-mail detector on it, and "e2e-agent" the default;
// and OAuth callers by scope two profiles that merge.
const profilesPolicy = `{
  "principals": {
    "e2e-agent": {"tools": ["*"]},
    "vendor": {"tools": ["*"], "profile": "vendor"},
    "pii": {"tools": ["*"], "profile": "pii"}
  },
  "scopes": {
    "porthole:read": {"tools": ["*"], "profile": "no-identities"},
    "porthole:write": {"tools": ["*"], "profile": "no-text"}
  },
  "profiles": {
    "vendor": {"classes": {"free-text": "withhold", "worker-identity": "withhold"}},
    "pii": {"personal": ["email"]},
    "no-identities": {"classes": {"worker-identity": "withhold", "free-text": "keep"}},
    "no-text": {"classes": {"free-text": "withhold"}}
  }
}`

// withheldCanaries are the seeded values a profile that withholds free
// text and worker identities must keep from its caller.
var withheldCanaries = []string{temporaltest.FreeTextMarker, temporaltest.CustomerEmail, temporaltest.CustomerNumber, temporaltest.WorkerIdentity}

// encodings are the forms a value could take on the wire: as it is, JSON
// escaped, base64 (standard and URL), and hex.
func encodings(s string) []string {
	j, _ := json.Marshal(s)
	return []string{s, strings.Trim(string(j), `"`), base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s))}
}

// assertNoneOf fails if b holds any of values in any of its encodings.
func assertNoneOf(t *testing.T, where string, b []byte, values ...string) {
	t.Helper()
	if len(b) == 0 {
		t.Fatalf("%s: nothing to search; the check would be vacuous", where)
	}
	for _, v := range values {
		for _, e := range encodings(v) {
			if i := bytes.Index(b, []byte(e)); i >= 0 {
				t.Errorf("%s: %q reached the caller as %q: ...%s...", where, v, e, b[max(0, i-160):min(len(b), i+len(e)+40)])
			}
		}
	}
}

// callEveryToolAs calls every tool of everyCall and returns the wire and
// the structured answers by tool; no call may fail.
func callEveryToolAs(t *testing.T, cs *mcp.ClientSession) map[string]string {
	t.Helper()
	answers := map[string]string{}
	for _, c := range everyCall {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		raw, _ := json.Marshal(res)
		if res.IsError {
			t.Fatalf("%s returned a tool error: %s", c.tool, raw)
		}
		s, _ := json.Marshal(res.StructuredContent)
		answers[c.tool] = string(s)
	}
	return answers
}

// TestAProfileWithholdsWhatItSaysAndTheDefaultSeesTodaysAnswers: against the
// seeded dev server, a principal whose profile withholds free text and
// worker identities calls every tool, and none of the seeded failure
// messages, schedule notes, batch reasons and identities (with their
// e-mail address and customer number) reaches it in any encoding; the
// answers name the classes withheld; asking about a withheld class is
// refused. A principal with the default profile, served by the same
// porthole, sees them as before; one whose profile runs the e-mail
// detector sees the text without the address. The audit log names each
// result's profile.
func TestAProfileWithholdsWhatItSaysAndTheDefaultSeesTodaysAnswers(t *testing.T) {
	t.Parallel()
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policyFile, []byte(profilesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	tokensFile, agent := newToken(t, "e2e-agent")
	vendor := newTokenIn(t, tokensFile, "vendor")
	pii := newTokenIn(t, tokensFile, "pii")
	env, auditLog, _ := auditEnv(t)
	env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokensFile, "PORTHOLE_POLICY_FILE="+policyFile)
	p, line := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
	endpoint := line["endpoint"].(string)

	vt := &recordingTransport{token: vendor}
	answers := callEveryToolAs(t, connectHTTP(t, endpoint, vt))
	assertNoneOf(t, "the vendor's wire", vt.bytes(), withheldCanaries...)
	for tool, want := range map[string]string{
		"describe_workflow":        `"withheld":["worker-identity","free-text"]`,
		"describe_task_queue":      `"withheld":["worker-identity"]`,
		"describe_batch_operation": `"withheld":["worker-identity","free-text"]`,
		"describe_schedule":        `"withheld":["free-text"]`,
		"describe_namespace":       ``,
	} {
		if got := answers[tool]; want != "" && !strings.Contains(got, want) || want == "" && strings.Contains(got, `"withheld"`) {
			t.Errorf("the vendor's %s does not say %s: %.400s", tool, want, got)
		}
	}

	at := &recordingTransport{token: agent}
	callEveryTool(t, connectHTTP(t, endpoint, at)) // each tool's checks, as without a policy
	for _, s := range withheldCanaries {
		if !bytes.Contains(at.bytes(), []byte(s)) {
			t.Errorf("the default profile's answers lack %q", s)
		}
	}

	pt := &recordingTransport{token: pii}
	callEveryToolAs(t, connectHTTP(t, endpoint, pt))
	if w := pt.bytes(); bytes.Contains(w, []byte(temporaltest.CustomerEmail)) || !bytes.Contains(w, []byte(temporaltest.FreeTextMarker)) || !bytes.Contains(w, []byte("[REDACTED:email]")) {
		t.Errorf("the e-mail detector's profile: the address shown %v, the free text kept %v", bytes.Contains(w, []byte(temporaltest.CustomerEmail)), bytes.Contains(w, []byte(temporaltest.FreeTextMarker)))
	}

	p.stop(t)
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"kind":"result"[^\n]*"principal":"\\"vendor\\""[^\n]*"profile":"\\"vendor\\""`).Match(b) {
		t.Error("no result record of the vendor names its profile")
	}
	if regexp.MustCompile(`"principal":"\\"e2e-agent\\""[^\n]*"profile"`).Match(b) {
		t.Error("a result record of the default profile names a profile")
	}
}

// TestAnOAuthCallerOfTwoGrantsGetsTheStricterOfTheirProfiles: a token of a
// real authorization server with two scopes, each granting a profile,
// gets both merged: neither worker identities nor free text.
func TestAnOAuthCallerOfTwoGrantsGetsTheStricterOfTheirProfiles(t *testing.T) {
	t.Parallel()
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policyFile, []byte(profilesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	prov := oidctest.Start(t, oidctest.Options{})
	o := startOAuthPorthole(t, prov, "PORTHOLE_POLICY_FILE="+policyFile)
	both, err := prov.ClientCredentialsToken(o.resource, "porthole:read", "porthole:write")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "porthole accepting the provider's token", func() bool { return o.status(both) == http.StatusOK })
	rt := &recordingTransport{token: both}
	answers := callEveryToolAs(t, connectHTTP(t, o.endpoint, rt))
	assertNoneOf(t, "the merged profile's wire", rt.bytes(), withheldCanaries...)
	if got := answers["describe_batch_operation"]; !strings.Contains(got, `"withheld":["worker-identity","free-text"]`) {
		t.Errorf("describe_batch_operation: %.400s", got)
	}
	o.proc.stop(t)
	b, _ := os.ReadFile(o.auditLog)
	if !bytes.Contains(b, []byte(`"profile":"\"no-identities+no-text\""`)) {
		t.Error("no result record names the merged profiles")
	}
}
