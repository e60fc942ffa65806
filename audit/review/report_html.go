package review

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// PageInputs say what a report was made from, for the header of its page.
type PageInputs struct {
	LogFiles []string // as given
	// Evidence names the keys and checkpoint files the files were verified
	// with, a line each.
	Evidence  []string
	Generated time.Time
	Version   string
}

//go:embed report.css
var pageCSS string

//go:embed report.html
var pageTemplate string

// PageStart is how every page begins. porthole audit report --html
// replaces an existing file only when it begins so: an earlier page.
const PageStart = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"porthole audit report\">\n"

func init() {
	if !strings.HasPrefix(pageTemplate, PageStart) {
		panic("audit: report.html does not begin with PageStart")
	}
}

// pageCSP is the page's Content-Security-Policy: nothing may be loaded or
// run, and the one style sheet is allowed by its hash, computed from its
// exact bytes. Security: the page shows what clients sent; were an escape
// ever missed, the policy still runs no script and fetches nothing (so no
// beacon reports who opened the page). Inline style="" attributes are not
// covered by a hash (without 'unsafe-hashes'), so the page has none.
var pageCSP = "default-src 'none'; style-src 'sha256-" + cssHash(pageCSS) + "'; base-uri 'none'; form-action 'none'"

func cssHash(css string) string {
	sum := sha256.Sum256([]byte(css))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// page is parsed once. html/template escapes every value for where it
// lands (text, attribute, SVG), so a name or value from a client is shown
// as text, never read as markup.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"shown":    func(v any) string { return safe(fmt.Sprint(v)) },
	"name":     func(s string) string { return safe(cutName(s, audit.MaxToolBytes)) },
	"reason":   func(s string) string { return safe(cutName(s, audit.MaxReasonBytes)) },
	"outcome":  func(o audit.Outcome) string { return safe(cutName(string(o), rowOutcomeBytes)) },
	"tally":    pageOutcomes,
	"quoted":   strconv.QuoteToASCII,
	"label":    label,
	"when":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"outcomes": outcomes,
}).Parse(pageTemplate))

// pageData is what the template reads.
type pageData struct {
	S                     *Summary
	In                    PageInputs
	CSP                   string
	CSS                   template.CSS
	Bad, Keyed            bool
	Verdict               verdict
	Range, Filter         string
	Generated             string
	Calls, NotOK          int
	Denials               int
	RowsCounted           int
	Charts                []chart
	ValueBytes, ArgsBytes int
	// Warning is the red line a page whose verdict is red repeats above
	// each section.
	Warning string
	// The summary tables as the page shows them: at most maxTableRows
	// rows each, and how many were left out.
	PrincipalRows             []*PrincipalSummary
	ToolRows                  []toolRow
	DenialRows                []*DenialSummary
	PrincipalsLeft, ToolsLeft int
	DenialsLeft, MaxTableRows int
}

type toolRow struct {
	Principal string
	*ToolSummary
}

// maxTableRows bounds each summary table of a page, as MaxRows bounds its
// records. Security: a client may name any tool, and each client address
// has its own denial rows, so without it the page grew with what clients
// chose to send; the counts and the text report keep
// every row.
const maxTableRows = 1000

// Past these a page's verdict shows no more of verify's notes (over all
// its series), nor of any one of them, or of the problem: a forged log
// (links only) may hold a chain-start of a long reason on every line, and
// a forger may give every file a chain of its own. porthole audit verify
// lists them all.
const (
	maxPageNotes    = 50
	maxPageNoteText = 1024
)

// pageOutcomes is a tool's outcomes as its cell on a page shows them: the
// ten most frequent, each cut, and how many more there are.
func pageOutcomes(m map[audit.Outcome]int) string {
	const most = 10
	if len(m) <= most {
		cut := map[audit.Outcome]int{}
		for o, n := range m {
			cut[audit.Outcome(cutName(string(o), rowOutcomeBytes))] += n
		}
		return outcomes(cut)
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b audit.Outcome) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(string(a), string(b))
	})
	top := map[audit.Outcome]int{}
	for _, o := range keys[:most] {
		top[audit.Outcome(cutName(string(o), rowOutcomeBytes))] += m[o]
	}
	return fmt.Sprintf("%s and %d more", outcomes(top), len(keys)-most)
}

// verdict says what the verification established, in words.
type verdict struct {
	Class    string // good, partial or bad
	Headline string
	// Warning is the red line of a bad verdict, above each section.
	Warning string
	Series  []seriesVerdict
}

type seriesVerdict struct {
	Head  string
	Lines []string
}

// ErrNoDetail is WriteHTML's refusal of a summary made without
// ReportOptions.Detail.
var ErrNoDetail = errors.New("the summary was made without its detail (ReportOptions.Detail)")

// WriteHTML writes the summary as one self-contained page: no script, no
// fetch, its style sheet allowed by hash. It begins with what the
// verification established, in words; a summary of files that did not
// verify says so in the title, above every section and at the end.
func (s *Summary) WriteHTML(w io.Writer, in PageInputs) error {
	if s.Detail == nil {
		return ErrNoDetail
	}
	d := pageData{S: s, In: in, CSP: pageCSP, CSS: template.CSS(pageCSS), Keyed: s.keyed(), Verdict: s.verdict(),
		Filter: s.Filter.describe(), Generated: in.Generated.UTC().Format(time.RFC3339), Charts: s.charts(),
		ValueBytes: rowValueBytes, ArgsBytes: rowArgsBytes}
	d.Bad = d.Verdict.Class == "bad"
	if d.Bad {
		d.Warning = d.Verdict.Warning
	}
	d.tables()
	if s.Records > 0 {
		d.Range = s.From.UTC().Format("2006-01-02 15:04:05Z") + " to " + s.To.UTC().Format("2006-01-02 15:04:05Z")
	}
	for _, p := range s.Principals {
		d.Calls += p.Calls
		d.NotOK += p.Failed
	}
	for _, dn := range s.Denials {
		d.Denials += dn.Count
	}
	d.RowsCounted = len(s.Detail.Rows) + s.Detail.RowsLeftOut
	return page.Execute(w, d)
}

// tables lays out the summary tables the page shows, each cut at
// maxTableRows.
func (d *pageData) tables() {
	s := d.S
	d.MaxTableRows = maxTableRows
	d.PrincipalRows = s.Principals[:min(len(s.Principals), maxTableRows)]
	d.PrincipalsLeft = len(s.Principals) - len(d.PrincipalRows)
	for _, p := range s.Principals {
		for _, t := range p.Tools {
			if len(d.ToolRows) == maxTableRows {
				d.ToolsLeft++
				continue
			}
			d.ToolRows = append(d.ToolRows, toolRow{p.Principal, t})
		}
	}
	d.DenialRows = s.Denials[:min(len(s.Denials), maxTableRows)]
	d.DenialsLeft = len(s.Denials) - len(d.DenialRows)
}

// pageNote is one of verify's notes, or a problem, as a page shows it.
func pageNote(s string) string { return safe(cutName(s, maxPageNoteText)) }

// verdict words what the verification established, as the table's header
// does (writeHeader), a series at a time.
func (s *Summary) verdict() verdict {
	var v verdict
	parts := s.linksOnlyParts()
	switch {
	case !s.Verified:
		v.Class, v.Headline = "bad", "NOT VERIFIED: "+pageNote(s.Problem.String())+". What follows may count forged records and miss deleted ones (porthole audit report --unverified)."
		v.Warning = "NOT VERIFIED: " + pageNote(s.Problem.String()) + "; what follows may count forged records and miss deleted ones."
	case s.linksOnly():
		v.Class, v.Headline = "bad", "NOT verified, links only: no HMAC key was given and no checkpoint proves any record, and anyone can recompute the links of a rewritten log (porthole audit report --links-only)."
		v.Warning = "NOT verified, links only: anyone could have written what follows."
	case parts != "":
		// Security: without an HMAC key, the records after the latest
		// checkpoint, or a series no checkpoint proves, rest on their
		// links alone, which a forger recomputes; "Verified" would vouch
		// for them.
		v.Class, v.Headline = "bad", parts
		v.Warning = "NOT verified past the latest signed checkpoint: records after it were checked by their links only, and anyone could have written them."
		if slices.ContainsFunc(s.Series, func(sv *Series) bool { return sv.OK() && sv.ReadByLinksOnly() && sv.ProvenTo == 0 }) {
			v.Warning = "NOT verified throughout: a series no checkpoint proves was checked by its links only, and anyone could have written it."
		}
	case len(s.Series) == 1:
		v.Class, v.Headline = "good", "Verified: "+s.Series[0].extent()+"."
	default:
		v.Class, v.Headline = "good", fmt.Sprintf("Verified: %d series, one per chain, each on its own.", len(s.Series))
	}
	// The notes a page shows are bounded over all its series, not each's
	// (a forger without the key can make many series).
	notesLeft := maxPageNotes
	for i, sv := range s.Series {
		v.Series = append(v.Series, s.seriesVerdict(&v, i, sv, &notesLeft))
	}
	return v
}

// seriesVerdict words one series' verification: its head (BROKEN, or its
// extent), its basis and as many of its notes as notesLeft allows; a
// verified series not proven complete makes the verdict partial.
func (s *Summary) seriesVerdict(v *verdict, i int, sv *Series, notesLeft *int) seriesVerdict {
	sh := seriesVerdict{Head: fmt.Sprintf("series %d: %s", i+1, sv.extent())}
	if len(s.Series) == 1 && v.Class != "bad" {
		sh.Head = "" // the headline says it
	}
	if !sv.OK() {
		sh.Head = fmt.Sprintf("series %d: BROKEN: %s (the chain held for %d records before it)", i+1, pageNote(sv.Problem.String()), sv.Records)
	}
	if v.Class == "good" && (sv.ProvenTo == 0 || sv.LastRecord > sv.ProvenTo) {
		v.Class = "partial" // verified, not proven complete: the basis says so
	}
	sh.Lines = append(sh.Lines, sv.Basis...)
	shown := min(len(sv.Notes), *notesLeft)
	for _, n := range sv.Notes[:shown] {
		sh.Lines = append(sh.Lines, "note: "+pageNote(n))
	}
	*notesLeft -= shown
	if len(sv.Notes) > shown {
		sh.Lines = append(sh.Lines, fmt.Sprintf("and %d more notes: porthole audit verify lists them all", len(sv.Notes)-shown))
	}
	return sh
}
