package audit

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"time"
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
}

// verdict says what the verification established, in words.
type verdict struct {
	Class    string // good, partial or bad
	Headline string
	Series   []seriesVerdict
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

// verdict words what the verification established, as the table's header
// does (writeHeader), a series at a time.
func (s *Summary) verdict() verdict {
	var v verdict
	switch {
	case !s.Verified:
		v.Class, v.Headline = "bad", "NOT VERIFIED: "+safe(s.Problem.String())+". What follows may count forged records and miss deleted ones (porthole audit report --unverified)."
	case s.linksOnly():
		v.Class, v.Headline = "bad", "NOT verified, links only: no HMAC key and no checkpoints were given, and anyone can recompute the links of a rewritten log (porthole audit report --links-only)."
	case len(s.Series) == 1:
		v.Class, v.Headline = "good", "Verified: "+s.Series[0].extent()+"."
	default:
		v.Class, v.Headline = "good", fmt.Sprintf("Verified: %d series, one per chain, each on its own.", len(s.Series))
	}
	for i, sv := range s.Series {
		sh := seriesVerdict{Head: fmt.Sprintf("series %d: %s", i+1, sv.extent())}
		if len(s.Series) == 1 && s.Verified {
			sh.Head = "" // the headline says it
		}
		if !sv.OK() {
			sh.Head = fmt.Sprintf("series %d: BROKEN: %s (the chain held for %d records before it)", i+1, safe(sv.Problem.String()), sv.Records)
		}
		if v.Class == "good" && (sv.ProvenTo == 0 || sv.LastRecord > sv.ProvenTo) {
			v.Class = "partial" // verified, not proven complete: the basis says so
		}
		sh.Lines = append(sh.Lines, sv.Basis...)
		for _, n := range sv.Notes {
			sh.Lines = append(sh.Lines, "note: "+safe(n))
		}
		v.Series = append(v.Series, sh)
	}
	return v
}
