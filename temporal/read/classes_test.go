package read

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/redact/quote"
)

// TestDiscloseCopiesWhatItChangesAndLeavesTheRestShared: the value given
// (the cache's) is never written; withheld fields are out of the JSON;
// kept free text goes through the rewrite; a value with nothing to change
// is returned as it is.
func TestDiscloseCopiesWhatItChangesAndLeavesTheRestShared(t *testing.T) {
	t.Parallel()
	identity := &quote.Text{Text: "alice@laptop", Origin: quote.OriginTemporal}
	orig := &WorkflowDescription{
		Observation: Observation{Namespace: "default"},
		Workflow:    WorkflowSummary{WorkflowID: "order-42", RunID: "r-1", WorkflowType: "Order"},
		PendingActivities: []PendingActivity{{ActivityID: "a-1", LastWorkerIdentity: identity,
			LastFailure: &FailureSummary{Failure: Failure{Message: quote.Text{Text: "mail jane@example.com", Origin: quote.OriginTemporal}, Kind: "application"}}}},
	}
	before, _ := json.Marshal(orig)
	v, n := Disclose(orig, Disclosure{Withhold: Of(ClassWorkflowID, ClassWorkerIdentity), FreeText: func(t quote.Text) (quote.Text, int) {
		n := strings.Count(t.Text, "jane@example.com")
		t.Text = strings.ReplaceAll(t.Text, "jane@example.com", "[REDACTED:email]")
		return t, n
	}})
	after, _ := json.Marshal(orig)
	if string(before) != string(after) || identity.Text != "alice@laptop" {
		t.Fatalf("Disclose wrote to the value it was given:\n%s\n%s", before, after)
	}
	got, _ := json.Marshal(v)
	for _, gone := range []string{"order-42", "alice@laptop", "jane@example.com", `"workflowId"`, `"lastWorkerIdentity"`} {
		if strings.Contains(string(got), gone) {
			t.Errorf("%s is still in %s", gone, got)
		}
	}
	if n != 1 || !strings.Contains(string(got), "[REDACTED:email]") || !strings.Contains(string(got), `"runId":"r-1"`) {
		t.Errorf("%d replacements; %s", n, got)
	}
	ns := &NamespaceDescription{State: "Registered"}
	if v, _ := Disclose(ns, Disclosure{Withhold: Of(ClassFreeText)}); v != any(ns) {
		t.Error("a value with no field of the class was copied")
	}
	if ClassesOf(typeOf(orig)) != Of(ClassPorthole, ClassWorkflowID, ClassRunID, ClassTypeName, ClassTaskQueue, ClassEnum, ClassActivityID, ClassWorkerIdentity, ClassFreeText, ClassNexusName) {
		t.Errorf("the classes of a description: %s", ClassesOf(typeOf(orig)))
	}
}

func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }
