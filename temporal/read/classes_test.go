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

// TestPseudonymsTakeTheirValuesPlacesInFreeTextToo: pseudonymised fields
// hold their pseudonyms, a quoted identity turns porthole's word, and the
// real values (4 bytes or more) the answer shows so are replaced in its
// kept free text; the value given is not written to.
func TestPseudonymsTakeTheirValuesPlacesInFreeTextToo(t *testing.T) {
	t.Parallel()
	orig := &WorkflowDescription{
		Workflow: WorkflowSummary{WorkflowID: "order-jane@example.com", RunID: "r1"},
		PendingActivities: []PendingActivity{{ActivityID: "a-1", LastWorkerIdentity: &quote.Text{Text: "worker@host", Origin: quote.OriginTemporal},
			LastFailure: &FailureSummary{Failure: Failure{Message: quote.Text{Text: "child order-jane@example.com failed in r1", Origin: quote.OriginTemporal}}}}},
	}
	v, _ := Disclose(orig, Disclosure{Pseudonymise: Of(ClassWorkflowID, ClassRunID, ClassWorkerIdentity), Pseudonym: func(c Class, s string) string { return "ps" + string(c) + "(" + strings.ToUpper(s) + ")" }})
	got := v.(*WorkflowDescription)
	if got.Workflow.WorkflowID != "psworkflow-id(ORDER-JANE@EXAMPLE.COM)" || got.Workflow.RunID != "psrun-id(R1)" {
		t.Errorf("the ids: %+v", got.Workflow)
	}
	if id := got.PendingActivities[0].LastWorkerIdentity; id.Text != "psworker-identity(WORKER@HOST)" || id.Origin != quote.OriginPorthole {
		t.Errorf("the identity: %+v", id)
	}
	if msg := got.PendingActivities[0].LastFailure.Message.Text; msg != "child psworkflow-id(ORDER-JANE@EXAMPLE.COM) failed in r1" {
		t.Errorf("the free text: %q", msg)
	}
	if orig.Workflow.WorkflowID != "order-jane@example.com" || orig.PendingActivities[0].LastFailure.Message.Text != "child order-jane@example.com failed in r1" || orig.PendingActivities[0].LastWorkerIdentity.Text != "worker@host" {
		t.Error("Disclose wrote to the value it was given")
	}
}

// TestWhatACutLeftOfARealValueGoesToo: a free text the quoting cut inside
// a real value the answer shows as a pseudonym keeps none of it.
func TestWhatACutLeftOfARealValueGoesToo(t *testing.T) {
	t.Parallel()
	cut := quote.New(nil).OfUpTo(quote.OriginTemporal, "child order-jane@example.com failed, and more words", 20)
	if head, wasCut := cut.CutOff(); !wasCut || !strings.HasSuffix(head, "order-jane@exa") {
		t.Fatalf("the cut: %q", cut.Text)
	}
	orig := &WorkflowDescription{Workflow: WorkflowSummary{WorkflowID: "order-jane@example.com"}, CloseFailure: &FailureSummary{Failure: Failure{Message: cut}}}
	v, _ := Disclose(orig, Disclosure{Pseudonymise: Of(ClassWorkflowID), Pseudonym: func(Class, string) string { return "psx" }})
	msg := v.(*WorkflowDescription).CloseFailure.Message.Text
	if strings.Contains(msg, "order-jane") || !strings.HasPrefix(msg, "child "+quote.PartialMarker) {
		t.Errorf("%q", msg)
	}
	if _, wasCut := v.(*WorkflowDescription).CloseFailure.Message.CutOff(); !wasCut {
		t.Errorf("the cut's marker is gone: %q", msg)
	}
}
