package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestPageSizeRefusesInsteadOfClamping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in, max int
		want    int
		refused string
	}{
		{"no page size takes the default", 0, MaxPageSize, DefaultPageSize, ""},
		{"a page size within bounds is kept", 7, MaxPageSize, 7, ""},
		{"the maximum itself is allowed", MaxPageSize, MaxPageSize, MaxPageSize, ""},
		{"one over the maximum is refused", MaxPageSize + 1, MaxPageSize, 0, "at most 100"},
		{"a huge page size is refused", 1 << 30, MaxPageSize, 0, "at most 100"},
		{"a negative page size is refused", -1, MaxPageSize, 0, "positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := PageSize(tc.in, tc.max)
			if tc.refused != "" {
				if !errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("PageSize(%d) = %d, %v; want a refusal with %q", tc.in, got, err, tc.refused)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PageSize(%d) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCheckIdentifierRefusesWhatCannotBeAnIdentifier(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		v        string
		required bool
		refused  bool
	}{
		{"a plain id is accepted", "order-1", true, false},
		{"an empty optional id is accepted", "", false, false},
		{"an empty required id is refused", "", true, true},
		{"a newline is refused", "a\nb", true, true},
		{"an escape character is refused", "a\x1b[31mb", true, true},
		{"invalid UTF-8 is refused", "a\xffb", true, true},
		{"an overlong id is refused", strings.Repeat("x", MaxIdentifierLen+1), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckIdentifier("workflowId", tc.v, tc.required)
			if (err != nil) != tc.refused {
				t.Fatalf("CheckIdentifier(%q) = %v, refused want %v", tc.v, err, tc.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "workflowId") {
				t.Fatalf("refusal %q does not name the argument", err)
			}
		})
	}
}

func TestPageRefusesAnOverlongToken(t *testing.T) {
	t.Parallel()
	if _, err := Page(strings.Repeat("t", MaxPageTokenLen+1), 0, MaxPageSize); !errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), "nextPageToken") {
		t.Fatalf("Page with an overlong token = %v", err)
	}
	if n, err := Page("abc", 0, MaxPageSize); err != nil || n != DefaultPageSize {
		t.Fatalf("Page = %d, %v", n, err)
	}
}

// TestGrantsByScopeAndClaimReachOAuthCallers: an OAuth caller may call what
// its principal, one of its scopes or one of its claim values is granted,
// and nothing else.
func TestGrantsByScopeAndClaimReachOAuthCallers(t *testing.T) {
	t.Parallel()
	f, err := ParseFile([]byte(`{"principals":{"oauth:corp:alice":{"tools":["describe_namespace"]}},
		"scopes":{"porthole:admin":{"tools":["*"]}},
		"claims":{"groups":{"sre":{"tools":["describe_workflow"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Grants()
	alice := Caller{Principal: "oauth:corp:alice", Scopes: []string{"porthole:read"}, Claims: map[string][]string{"groups": {"dev", "sre"}}}
	for tool, want := range map[string]bool{"describe_namespace": true, "describe_workflow": true, "list_workflows": false} {
		if got := g.AllowsCaller(alice, tool); got != want {
			t.Errorf("alice may call %s: %v, want %v", tool, got, want)
		}
	}
	if !g.AllowsCaller(Caller{Principal: "oauth:corp:bob", Scopes: []string{"porthole:admin"}}, "list_workflows") {
		t.Error("the admin scope does not grant every tool")
	}
	if g.AllowsCaller(Caller{Principal: "oauth:corp:eve", Claims: map[string][]string{"groups\x00sre": {"x"}}}, "describe_workflow") {
		t.Error("a claim name holding the separator was taken for a grant")
	}
	if _, err := ParseFile([]byte(`{"scopes":{"s":{"tools":["no_such_tool"]}}}`)); err == nil {
		t.Error("a scope granting an unknown tool was accepted")
	}
}

// A second factor is required by granting tools only by the claim in which
// the issuer says how its caller signed in: a token of any other sign-in,
// or that says nothing, is granted nothing.
func TestASecondFactorIsRequiredByGrantingOnlyByItsClaim(t *testing.T) {
	t.Parallel()
	f, err := ParseFile([]byte(`{"claims":{"acr":{"urn:example:mfa":{"tools":["*"]}},"amr":{"otp":{"tools":["*"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Grants()
	for what, c := range map[string]struct {
		claims map[string][]string
		want   bool
	}{
		"acr that names the second factor":   {map[string][]string{"acr": {"urn:example:mfa"}}, true},
		"amr that holds otp among others":    {map[string][]string{"amr": {"pwd", "otp"}}, true},
		"acr of a password alone":            {map[string][]string{"acr": {"urn:example:pwd"}}, false},
		"amr of a password alone":            {map[string][]string{"amr": {"pwd"}}, false},
		"no acr or amr at all":               {map[string][]string{"groups": {"sre"}}, false},
		"the value in a claim of other name": {map[string][]string{"level": {"urn:example:mfa"}}, false},
	} {
		if got := g.AllowsCaller(Caller{Principal: "oauth:corp:alice", Claims: c.claims}, "list_workflows"); got != c.want {
			t.Errorf("%s: granted %v, want %v", what, got, c.want)
		}
	}
}
