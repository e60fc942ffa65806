package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestThePolicyCheckAndTheDisclosureViewSayWhatAProfileSees: `porthole
// policy check` names each profile and what a caller of two grants with
// different profiles gets; `porthole disclosure --profile` marks each
// field kept or withheld, from the result types; an unknown profile is a
// usage error.
func TestThePolicyCheckAndTheDisclosureViewSayWhatAProfileSees(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(profilesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"policy", "check", "--policy-file", path}, &out, &errOut); code != 0 {
		t.Fatalf("policy check: %d, %s", code, errOut.String())
	}
	for _, want := range []string{
		`profile "vendor": the profile vendor: worker-identity, free-text withheld`,
		`merge: a caller matched by the scope "porthole:read" (profile "no-identities") and the scope "porthole:write" (profile "no-text") gets the profiles no-identities+no-text merged: worker-identity, free-text withheld`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("policy check does not say %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"disclosure", "--policy-file", path, "--profile", "vendor"}, &out, &errOut); code != 0 {
		t.Fatalf("disclosure: %d, %s", code, errOut.String())
	}
	for _, want := range []string{
		`(?m)^  withheld +pendingActivities\[\]\.lastWorkerIdentity +quoted text +worker-identity$`,
		`(?m)^  withheld +closeFailure\.message +quoted text +free-text$`,
		`(?m)^  kept +workflow\.workflowId +identifier +workflow-id$`,
		`(?m)^  kept +the whole answer +quoted text +upstream-text$`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("the vendor's view does not match %s:\n%.2000s", want, out.String())
		}
	}
	if code := run([]string{"disclosure", "--policy-file", path, "--profile", "nobody"}, &out, &errOut); code != 2 {
		t.Errorf("an unknown profile: exit %d", code)
	}
}
