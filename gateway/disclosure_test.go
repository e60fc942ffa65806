package gateway

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// The field tables of docs/disclosure.md are generated from the result types
// of every tool; this test fails when the document and the code disagree.
// UPDATE_DISCLOSURE=1 go test ./gateway -run Disclosure rewrites them.

const (
	disclosurePath  = "../docs/disclosure.md"
	generatedStart  = "<!-- generated: field tables; do not edit by hand -->"
	generatedFinish = "<!-- end of generated field tables -->"
)

func generatedTables() string {
	var b strings.Builder
	b.WriteString(generatedStart + "\n")
	for _, tl := range (&Server{reader: &fakeReader{}}).catalog() {
		fields, err := read.Fields(tl.output)
		if err != nil {
			panic(err)
		}
		var rows []string
		for _, f := range fields {
			class := "-"
			if f.Class != "" {
				class = "`" + string(f.Class) + "`"
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", f.Path, f.Kind, class))
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n| field | reveals | class |\n|---|---|---|\n%s\n", tl.def.Name, strings.Join(rows, "\n"))
	}
	b.WriteString("\n" + generatedFinish)
	return b.String()
}

func TestDisclosureDocMatchesTheResultTypes(t *testing.T) {
	b, err := os.ReadFile(disclosurePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, generatedStart), strings.Index(doc, generatedFinish)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated markers", disclosurePath)
	}
	want := generatedTables()
	got := doc[i : j+len(generatedFinish)]
	if got == want {
		return
	}
	if os.Getenv("UPDATE_DISCLOSURE") == "1" {
		if err := os.WriteFile(disclosurePath, []byte(doc[:i]+want+doc[j+len(generatedFinish):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is out of step with the result types; run UPDATE_DISCLOSURE=1 go test ./gateway -run Disclosure and review the diff", disclosurePath)
}

// TestEveryStringFieldHasAClass fails on a string field of a result that
// has no disclosure class, and on one of a class a profile may withhold
// whose JSON would not leave it out when withheld (read.Fields refuses
// both).
func TestEveryStringFieldHasAClass(t *testing.T) {
	t.Parallel()
	for _, tl := range (&Server{reader: &fakeReader{}}).catalog() {
		if _, err := read.Fields(tl.output); err != nil {
			t.Errorf("%s: %v", tl.def.Name, err)
		}
	}
}

// countedDescriber is describeReader counting its reads.
type countedDescriber struct {
	describeReader
	reads atomic.Int64
}

func (c *countedDescriber) DescribeWorkflow(ctx context.Context, ref read.WorkflowRef) (*read.WorkflowDescription, error) {
	c.reads.Add(1)
	return c.describeReader.DescribeWorkflow(ctx, ref)
}

// profileFront serves alice with the default profile and bob with one
// that withholds free text, worker identities and run ids, the cache on.
func profileFront(t *testing.T) (*front, *countedDescriber) {
	t.Helper()
	pf, err := policy.ParseFile([]byte(`{"principals": {"alice": {"tools": ["*"]}, "bob": {"tools": ["*"], "profile": "vendor"}},
		"profiles": {"vendor": {"classes": {"free-text": "withhold", "worker-identity": "withhold", "run-id": "withhold", "search-attribute": "withhold"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := &countedDescriber{}
	f := newFrontReading(t, r, HTTPOptions{}, func(o *Options) {
		o.Grants, o.CacheTTL = pf.Grants(), time.Minute
		o.QueryRules.CustomAttributes = []string{"CustomerTier"}
	})
	return f, r
}

func describeBody(args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":` + args + `}}`
}

// TestAProfilesAnswerIsNeverServedToAnotherProfile: the cache keeps one
// answer per profile, so alice (the default) and bob (withholding free
// text, identities and run ids) each get their own from the cache, in
// either order; bob's names what it withheld, and alice's is as it was.
func TestAProfilesAnswerIsNeverServedToAnotherProfile(t *testing.T) {
	t.Parallel()
	f, r := profileFront(t)
	for range 2 {
		_, _, alice := f.do(t, "POST", "/mcp", bearer(f.alice), describeBody(`{"workflowId":"w-1"}`))
		_, _, bob := f.do(t, "POST", "/mcp", bearer(f.bob), describeBody(`{"workflowId":"w-1"}`))
		for _, s := range []string{"porthole-free-text-marker", "porthole-demo-worker", "0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e6f"} {
			if !strings.Contains(alice, s) {
				t.Errorf("alice's answer lacks %q: %.300s", s, alice)
			}
			if strings.Contains(bob, s) {
				t.Errorf("bob's answer holds %q, which his profile withholds: %.300s", s, bob)
			}
		}
		if !strings.Contains(bob, `\"withheld\":[\"run-id\",\"worker-identity\",\"free-text\"]`) || strings.Contains(alice, "withheld") {
			t.Errorf("withheld: bob %.400s\nalice %.400s", bob, alice)
		}
		if !strings.Contains(bob, `\"workflowId\":\"w-1\"`) || !strings.Contains(bob, `\"workflowType\":\"ShipmentWorkflow\"`) {
			t.Errorf("bob's answer lost what his profile keeps: %.400s", bob)
		}
	}
	if n := r.reads.Load(); n != 2 {
		t.Errorf("%d reads of Temporal, want one per profile (2)", n)
	}
	var profiles []string
	for _, rec := range f.auditor.all() {
		if rec.Kind == audit.KindResult {
			profiles = append(profiles, rec.Principal+":"+rec.Profile)
		}
	}
	if want := []string{"alice:", "bob:vendor", "alice:", "bob:vendor"}; !slices.Equal(profiles, want) {
		t.Errorf("the result records' profiles: %q, want %q", profiles, want)
	}
}

// TestACallerCannotAskAboutWhatItsProfileWithholds: bob's profile
// withholds run ids, so a runId argument and a query on RunId are refused
// with a sentence and reach no Temporal; it withholds search-attribute
// names, so his queries may name no custom attribute and his refusals list
// none; alice may ask all of it.
func TestACallerCannotAskAboutWhatItsProfileWithholds(t *testing.T) {
	t.Parallel()
	f, r := profileFront(t)
	for _, body := range []string{
		describeBody(`{"workflowId":"w-1","runId":"0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e6f"}`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_workflows","arguments":{"query":"WorkflowType = 'x' AND RunId = 'r'"}}}`,
	} {
		_, _, got := f.do(t, "POST", "/mcp", bearer(f.bob), body)
		if !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "your disclosure profile (vendor) withholds") {
			t.Errorf("bob asking about a run id: %.400s", got)
		}
	}
	if n := r.reads.Load(); n != 0 {
		t.Errorf("a refused question reached Temporal %d times", n)
	}
	// bob's profile withholds search-attribute names: a query may name no
	// custom attribute, and the screen's refusal does not list them.
	count := func(token, query string) string {
		_, _, got := f.do(t, "POST", "/mcp", bearer(token), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_workflows","arguments":{"query":"`+query+`"}}}`)
		return got
	}
	if got := count(f.bob, "CustomerTier = 'gold'"); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "not allowed here") {
		t.Errorf("bob's query on a custom attribute: %.400s", got)
	}
	if got := count(f.bob, "NoSuchAttribute = 'x'"); !strings.Contains(got, `"isError":true`) || strings.Contains(got, "CustomerTier") {
		t.Errorf("bob's refusal names a custom attribute: %.400s", got)
	}
	if got := count(f.alice, "NoSuchAttribute = 'x'"); !strings.Contains(got, "and CustomerTier") {
		t.Errorf("alice's refusal does not list the custom attributes she may name: %.400s", got)
	}
	_, _, got := f.do(t, "POST", "/mcp", bearer(f.alice), describeBody(`{"workflowId":"w-1","runId":"0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e6f"}`))
	if strings.Contains(got, `"isError":true`) {
		t.Errorf("alice asking about a run id: %.400s", got)
	}
}

// TestAProfilesDetectorsTakeThePartAValueTheCutLeft: a profile's e-mail
// detector over a quoted text cut inside an address replaces what the cut
// left of it, as the quoting does for the server's own detectors.
func TestAProfilesDetectorsTakeThePartAValueTheCutLeft(t *testing.T) {
	t.Parallel()
	r := (&redact.Redactor{}).WithPersonal(redact.PersonalEmail)
	cut := quote.New(nil).OfUpTo(quote.OriginTemporal, "write to jane.customer@example.com today, and more words after", 30)
	whole, _ := cut.CutOff()
	if _, wasCut := cut.CutOff(); !wasCut || !strings.Contains(whole, "jane.customer@exa") || strings.Contains(whole, "example.com") {
		t.Fatalf("the cut: %q", cut.Text)
	}
	got, n := personalText(r)(cut)
	if n != 1 || strings.Contains(got.Text, "jane") || !strings.HasPrefix(got.Text, "write to "+redact.PartialMarker) || got.Origin != quote.OriginTemporal {
		t.Errorf("%q (%d)", got.Text, n)
	}
	if _, stillCut := got.CutOff(); !stillCut {
		t.Errorf("the cut's marker is gone: %q", got.Text)
	}
}
