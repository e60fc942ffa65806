package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Filter narrows a report.
type Filter struct {
	Since, Until time.Time // zero means open
	Principal    string
}

// Summary answers "who asked what" over a set of records.
type Summary struct {
	Records    int                 `json:"records"`
	From       time.Time           `json:"from"`
	To         time.Time           `json:"to"`
	Principals []*PrincipalSummary `json:"principals"` // busiest first
	Denials    []*DenialSummary    `json:"denials"`    // most frequent first
}

// PrincipalSummary is one principal's calls.
type PrincipalSummary struct {
	Principal string         `json:"principal"`
	Calls     int            `json:"calls"`
	Failed    int            `json:"failed"` // results other than ok
	FirstSeen time.Time      `json:"firstSeen"`
	LastSeen  time.Time      `json:"lastSeen"`
	Tools     []*ToolSummary `json:"tools"` // busiest first
}

// ToolSummary is one principal's calls of one tool.
type ToolSummary struct {
	Tool     string          `json:"tool"`
	Calls    int             `json:"calls"`
	Outcomes map[Outcome]int `json:"outcomes"`
}

// DenialSummary counts denials of one reason from one address.
type DenialSummary struct {
	Outcome    Outcome   `json:"outcome"`
	Status     int       `json:"status,omitempty"`
	Reason     string    `json:"reason"`
	ClientAddr string    `json:"clientAddr"`
	Count      int       `json:"count"`
	LastSeen   time.Time `json:"lastSeen"`
}

// Summarize reads logs and summarizes the records the filter admits. Lines
// that are not records are skipped: verifying is Verify's job.
func Summarize(paths []string, f Filter) (*Summary, error) {
	s := &Summary{Principals: []*PrincipalSummary{}, Denials: []*DenialSummary{}}
	principals := map[string]*PrincipalSummary{}
	denials := map[string]*DenialSummary{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			e, err := parseLine(line, nil)
			if err != nil {
				continue
			}
			e.Principal = unquote(e.Principal)
			if !f.admits(e) {
				continue
			}
			s.Records++
			if s.From.IsZero() || e.Time.Before(s.From) {
				s.From = e.Time
			}
			if e.Time.After(s.To) {
				s.To = e.Time
			}
			switch e.Kind {
			case KindCall:
				ps := principals[e.Principal]
				if ps == nil {
					ps = &PrincipalSummary{Principal: e.Principal, FirstSeen: e.Time}
					principals[e.Principal] = ps
				}
				ps.Calls++
				ps.LastSeen = e.Time
				tool := toolName(e)
				ts := findTool(ps, tool)
				ts.Calls++
			case KindResult:
				if ps := principals[e.Principal]; ps != nil {
					ts := findTool(ps, toolName(e))
					ts.Outcomes[e.Outcome]++
					if e.Outcome != OutcomeOK {
						ps.Failed++
					}
				}
			case KindDenial:
				countDenials(denials, e.Outcome, e.Status, e.Reason, e.ClientAddr, 1, e.Time)
			case KindDenials:
				// A summary's denials count as if each had its record.
				for _, g := range e.Groups {
					countDenials(denials, g.Outcome, g.Status, g.Reason, e.ClientAddr, g.Count, e.Last)
				}
			}
		}
	}
	for _, ps := range principals {
		slices.SortFunc(ps.Tools, func(a, b *ToolSummary) int { return b.Calls - a.Calls })
		s.Principals = append(s.Principals, ps)
	}
	slices.SortFunc(s.Principals, func(a, b *PrincipalSummary) int {
		if a.Calls != b.Calls {
			return b.Calls - a.Calls
		}
		return strings.Compare(a.Principal, b.Principal)
	})
	for _, d := range denials {
		s.Denials = append(s.Denials, d)
	}
	slices.SortFunc(s.Denials, func(a, b *DenialSummary) int { return b.Count - a.Count })
	return s, nil
}

func (f Filter) admits(e Entry) bool {
	switch {
	case !f.Since.IsZero() && e.Time.Before(f.Since):
		return false
	case !f.Until.IsZero() && !e.Time.Before(f.Until):
		return false
	case f.Principal != "" && e.Principal != f.Principal:
		return false
	}
	return e.Kind == KindCall || e.Kind == KindResult || e.Kind == KindDenial || e.Kind == KindDenials
}

// countDenials adds n denials of one outcome, status, reason and address,
// the last at last.
func countDenials(denials map[string]*DenialSummary, outcome Outcome, status int, reason, addr string, n int, last time.Time) {
	key := fmt.Sprint(outcome, "\x00", status, "\x00", reason, "\x00", addr)
	d := denials[key]
	if d == nil {
		d = &DenialSummary{Outcome: outcome, Status: status, Reason: reason, ClientAddr: addr}
		denials[key] = d
	}
	d.Count += n
	if last.After(d.LastSeen) {
		d.LastSeen = last
	}
}

// unquote reads a quoted field back; a field that does not unquote is shown
// as it stands.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// toolName is the tool of a record, unquoted: tools/list counts as a tool of
// its own.
func toolName(e Entry) string {
	if e.Tool == "" {
		return e.Method
	}
	return unquote(e.Tool)
}

func findTool(ps *PrincipalSummary, tool string) *ToolSummary {
	for _, t := range ps.Tools {
		if t.Tool == tool {
			return t
		}
	}
	t := &ToolSummary{Tool: tool, Outcomes: map[Outcome]int{}}
	ps.Tools = append(ps.Tools, t)
	return t
}

// WriteJSON writes the summary as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteTable writes the summary for a person. Values that came from clients
// are shown quoted when they are not plain printable ASCII, so a report
// printed to a terminal cannot carry escape sequences.
func (s *Summary) WriteTable(w io.Writer) error {
	const layout = "2006-01-02 15:04:05Z"
	fmt.Fprintf(w, "%d records", s.Records)
	if s.Records > 0 {
		fmt.Fprintf(w, " from %s to %s", s.From.UTC().Format(layout), s.To.UTC().Format(layout))
	}
	fmt.Fprint(w, "\n\nCalls by principal (busiest first)\n")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tCALLS\tNOT OK\tFIRST SEEN\tLAST SEEN")
	for _, p := range s.Principals {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", safe(p.Principal), p.Calls, p.Failed, p.FirstSeen.UTC().Format(layout), p.LastSeen.UTC().Format(layout))
	}
	tw.Flush()
	fmt.Fprint(w, "\nCalls by principal and tool\n")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tTOOL\tCALLS\tOUTCOMES")
	for _, p := range s.Principals {
		for _, t := range p.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", safe(p.Principal), safe(t.Tool), t.Calls, outcomes(t.Outcomes))
		}
	}
	tw.Flush()
	fmt.Fprint(w, "\nDenials by reason and address\n")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tSTATUS\tREASON\tCLIENT ADDRESS\tCOUNT\tLAST SEEN")
	for _, d := range s.Denials {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", d.Outcome, d.Status, safe(d.Reason), safe(d.ClientAddr), d.Count, d.LastSeen.UTC().Format(layout))
	}
	return tw.Flush()
}

func outcomes(m map[Outcome]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[Outcome(k)]))
	}
	return strings.Join(parts, " ")
}

func safe(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return strconv.QuoteToASCII(s)
		}
	}
	if s == "" {
		return "-"
	}
	return s
}
