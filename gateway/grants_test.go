package gateway

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/policy"
)

func TestGrantsShapeTheToolListAndRefuseCalls(t *testing.T) {
	t.Parallel()
	pf, err := policy.ParseFile([]byte(`{"principals":{"alice":{"tools":["describe_namespace","list_workflows"]},"bob":{"tools":["*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{}, func(o *Options) { o.Grants = pf.Grants() })
	_, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
	if strings.Count(body, `"name":"`) != 2 || !strings.Contains(body, "describe_namespace") || strings.Contains(body, "get_workflow_history") {
		t.Fatalf("alice's tools/list = %.300s", body)
	}
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.bob), listToolsBody)
	if strings.Count(body, `"name":"`) != len(policy.Tools) {
		t.Fatalf("bob's tools/list has %d tools", strings.Count(body, `"name":"`))
	}
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.alice), callBody("get_workflow_history"))
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "not one you may call") {
		t.Fatalf("alice calling an ungranted tool: %s", body)
	}
	if n := f.reader.count(); n != 0 {
		t.Fatalf("an ungranted call reached Temporal")
	}
	var denied bool
	for _, r := range f.auditor.all() {
		denied = denied || r.Kind == audit.KindResult && r.Tool == "get_workflow_history" && r.Outcome == audit.OutcomeDenied && r.Principal == "alice"
	}
	if !denied {
		t.Fatal("the ungranted call was not audited as a denial")
	}
	for _, bad := range []string{`{"principals":{"a":{"tools":["terminate_workflow"]}}}`, `{"principals":{},"extra":1}`, `{}`} {
		if _, err := policy.ParseFile([]byte(bad)); err == nil {
			t.Errorf("policy %s was accepted", bad)
		}
	}
}

// TestAReloadedPolicyTakesEffectAndAMissingOneGrantsNothing: the policy
// file's grants are read on every call, so a reload takes effect at once;
// while the file is gone nobody may call a tool (never "no policy", which
// grants every tool), and /readyz says why.
func TestAReloadedPolicyTakesEffectAndAMissingOneGrantsNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, path, `{"principals": {"alice": {"tools": ["*"]}}}`)
	store, err := policy.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{}, func(o *Options) { o.Policy = store })
	admin := httptest.NewServer(f.server.AdminHandler())
	t.Cleanup(admin.Close)
	tools := func() int {
		_, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
		return strings.Count(body, `"name":"`)
	}
	if n := tools(); n != len(policy.Tools) {
		t.Fatalf("alice granted every tool sees %d", n)
	}
	writeFile(t, path, `{"principals": {"alice": {"tools": ["describe_namespace"]}}}`)
	store.Reload()
	if n := tools(); n != 1 {
		t.Fatalf("after a reload granting one tool alice sees %d", n)
	}
	os.Remove(path)
	store.Reload()
	if n := tools(); n != 0 {
		t.Fatalf("with the policy file gone alice sees %d tools, want none", n)
	}
	resp, body := send(t, http.MethodGet, admin.URL+"/readyz", nil, "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, policy.ProblemPolicyUnreadable) {
		t.Fatalf("/readyz with the policy file gone: %d %q", resp.StatusCode, body)
	}
}
