package policy

import (
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/temporal/read"
)

const twoProfiles = `{
  "principals": {"alice": {"tools": ["*"]}, "oauth:corp:ci": {"tools": ["*"], "profile": "ids"}},
  "scopes": {"porthole:read": {"tools": ["*"], "profile": "text"}, "porthole:admin": {"tools": ["*"]}},
  "claims": {"groups": {"sre": {"tools": ["*"], "profile": "text"}}},
  "profiles": {
    "ids": {"classes": {"workflow-id": "withhold", "free-text": "keep"}, "personal": ["phone"]},
    "text": {"classes": {"free-text": "withhold"}, "personal": ["email"]}
  }
}`

// TestGrantsThatMatchOneCallerMergeTheirProfilesStrictestFirst: a caller
// matched by grants of two profiles gets each class's most restrictive
// choice and both profiles' detectors; one matched by a profile's grant
// and a default grant gets the profile; a static principal its own.
func TestGrantsThatMatchOneCallerMergeTheirProfilesStrictestFirst(t *testing.T) {
	t.Parallel()
	f, err := ParseFile([]byte(twoProfiles))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Grants()
	both := g.DisclosureFor(Caller{Principal: "oauth:corp:ci", Scopes: []string{"porthole:read"}})
	if both.Name != "ids+text" || both.Withhold != read.Of(read.ClassWorkflowID, read.ClassFreeText) || strings.Join(both.Personal, ",") != "email,phone" {
		t.Errorf("the two profiles merged: %+v", both)
	}
	if d := g.DisclosureFor(Caller{Principal: "oauth:corp:x", Scopes: []string{"porthole:admin", "porthole:read"}}); d.Name != "text" || d.Withhold != read.Of(read.ClassFreeText) {
		t.Errorf("a profile's grant beside a default one: %+v", d)
	}
	if d := g.DisclosureFor(Caller{Principal: "alice"}); !d.Default() || d.Key() != "" {
		t.Errorf("alice: %+v", d)
	}
	if d := g.DisclosureFor(Caller{Principal: "oauth:corp:y", Claims: map[string][]string{"groups": {"sre"}}}); d.Name != "text" {
		t.Errorf("by claim: %+v", d)
	}
	if (*Grants)(nil).DisclosureFor(Caller{Principal: "anyone"}).Default() != true {
		t.Error("no policy file is not the default profile")
	}
	if both.Key() == g.DisclosureFor(Caller{Principal: "oauth:corp:x", Scopes: []string{"porthole:read"}}).Key() {
		t.Error("two different disclosures share a cache key")
	}
	merges := strings.Join(f.Merges(), "\n")
	for _, want := range []string{
		`a caller matched by the claim groups="sre" (profile "text") and the principal "oauth:corp:ci" (profile "ids") gets the profiles ids+text merged: workflow-id, free-text withheld; detectors email, phone on free text`,
		`the scope "porthole:admin" (profile default) and the scope "porthole:read" (profile "text") gets the profile text: free-text withheld; detectors email on free text`,
	} {
		if !strings.Contains(merges, want) {
			t.Errorf("the merges do not say %q:\n%s", want, merges)
		}
	}
	if strings.Contains(merges, `"alice"`) {
		t.Errorf("a static principal matches its own grant only, yet: %s", merges)
	}
}

func TestAProfileThatCannotBeAppliedIsRefusedAtLoad(t *testing.T) {
	t.Parallel()
	for bad, want := range map[string]string{
		`{"principals": {"a": {"tools": ["*"], "profile": "nope"}}}`:                                             `does not define`,
		`{"principals": {"a": {"tools": ["*"]}}, "profiles": {"p": {"classes": {"customer-id": "withhold"}}}}`:   `porthole does not have`,
		`{"principals": {"a": {"tools": ["*"]}}, "profiles": {"p": {"classes": {"free-text": "pseudonymise"}}}}`: `only identifiers`,
		`{"principals": {"a": {"tools": ["*"]}}, "profiles": {"p": {"classes": {"free-text": "maybe"}}}}`:        `keep, pseudonymise or withhold`,
		`{"principals": {"a": {"tools": ["*"]}}, "scopes": {"s": {"tools": ["*"], "profile": "p"}, "t": {"tools": ["*"], "profile": "q"}}, "profiles": {"p": {"classes": {"run-id": "pseudonymise"}}, "q": {"classes": {"workflow-id": "pseudonymise"}}}}`: `the profiles "p" and "q" both pseudonymise, and a caller matched by the scope "s" and the scope "t"`,
		`{"principals": {"a": {"tools": ["*"]}}, "profiles": {"p": {"classes": {"enum": "withhold"}}}}`: `cannot be withheld`,
		`{"principals": {"a": {"tools": ["*"]}}, "profiles": {"p": {"personal": ["ssn"]}}}`:             `does not exist`,
		`{"principals": {"a": {"tools": ["*"]}}, "profiles": {"a+b": {}}}`:                              `holds a +`,
	} {
		if _, err := ParseFile([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", bad, err, want)
		}
	}
}

// TestPseudonymisingSitsBetweenKeepingAndWithholding: a merge takes
// withhold over pseudonymise over keep, and names the key of the one
// profile that pseudonymises; two static principals' profiles that both
// pseudonymise are not refused (no caller has both).
func TestPseudonymisingSitsBetweenKeepingAndWithholding(t *testing.T) {
	t.Parallel()
	f, err := ParseFile([]byte(`{
  "principals": {"a": {"tools": ["*"], "profile": "ids"}, "b": {"tools": ["*"], "profile": "runs"}},
  "scopes": {"s": {"tools": ["*"], "profile": "ids"}, "t": {"tools": ["*"], "profile": "strict"}},
  "profiles": {
    "ids": {"classes": {"workflow-id": "pseudonymise", "run-id": "pseudonymise"}},
    "runs": {"classes": {"run-id": "pseudonymise"}},
    "strict": {"classes": {"run-id": "withhold", "free-text": "withhold"}}
  }}`))
	if err != nil {
		t.Fatal(err)
	}
	d := f.Grants().DisclosureFor(Caller{Principal: "oauth:x:y", Scopes: []string{"s", "t"}})
	if d.Withhold != read.Of(read.ClassRunID, read.ClassFreeText) || d.Pseudonymise != read.Of(read.ClassWorkflowID) || d.PseudonymKey != "ids" {
		t.Errorf("merged: %+v", d)
	}
	if got := f.Profile("ids").Describe(); !strings.Contains(got, "workflow-id, run-id pseudonymised (the profile ids's key); the real values an answer shows as pseudonyms replaced by them in its free text") {
		t.Errorf("ids: %s", got)
	}
	if f.Profile("ids").Key() == f.Profile("runs").Key() {
		t.Error("two pseudonymising profiles share a cache key")
	}
}
