package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/porthole-dev/porthole/audit"
)

// WriteJSON writes the summary as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// warnEvery is the most lines a report of a series that did not verify
// runs from one warning line to the next, counting one of them: no page
// of it, printed, pasted or cut, passes for a verified report.
const warnEvery = 50

// WriteTable writes the summary for a person. Values that came from clients
// are shown quoted when they are not plain printable ASCII, so a report
// printed to a terminal cannot carry escape sequences. The report of a
// series that did not verify begins and ends with a warning line naming its
// first break, repeated at least every warnEvery lines.
func (s *Summary) WriteTable(w io.Writer) error {
	if s.Verified {
		return s.writeTable(w)
	}
	pw := &pageWarner{w: w, every: warnEvery,
		warning: fmt.Appendf(nil, "WARNING: NOT VERIFIED: %s; what follows may count forged records and miss deleted ones\n", safe(s.Problem.String()))}
	if err := pw.warn(); err != nil {
		return err
	}
	if err := s.writeTable(pw); err != nil {
		return err
	}
	return pw.warn()
}

func (s *Summary) writeTable(w io.Writer) error {
	const layout = "2006-01-02 15:04:05Z"
	s.writeHeader(w)
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
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(w, "\nCalls by principal and tool\n")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tTOOL\tCALLS\tOUTCOMES")
	for _, p := range s.Principals {
		for _, t := range p.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", safe(p.Principal), safe(t.Tool), t.Calls, outcomes(t.Outcomes))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.DenialsLeftOut {
		fmt.Fprint(w, "\nDenials are left out: they name no tool and no arguments\n")
		return nil
	}
	fmt.Fprint(w, "\nDenials by reason and address\n")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tSTATUS\tREASON\tCLIENT ADDRESS\tCOUNT\tLAST SEEN")
	for _, d := range s.Denials {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", safe(string(d.Outcome)), d.Status, safe(d.Reason), safe(d.ClientAddr), d.Count, d.LastSeen.UTC().Format(layout))
	}
	return tw.Flush()
}

// linksOnly reports whether every series was checked for its links only:
// no HMAC key, no checkpoint proving it.
func (s *Summary) linksOnly() bool {
	for _, sv := range s.Series {
		if sv.Keyed || sv.ProvenTo != 0 {
			return false
		}
	}
	return len(s.Series) > 0
}

// linksOnlyParts says, as a headline, which records of which series were
// checked by their links only (ReadByLinksOnly): those after the latest
// checkpoint proving the rest, or a whole series no checkpoint proves
// beside others that were proven; "" when none was.
//
// Security: a series read by its links alone beside a proven one was
// headed "verified" (a pruned series whose latest
// checkpoint is before its first record, rewritten by a forger).
func (s *Summary) linksOnlyParts() string {
	var parts []string
	for i, sv := range s.Series {
		if !sv.OK() || !sv.ReadByLinksOnly() {
			continue
		}
		p := "checked by its links only: no HMAC key, and no checkpoint proves any of its records (anyone could have written them)"
		if sv.ProvenTo != 0 {
			p = fmt.Sprintf("Verified to seq %d by signed checkpoints; seq %d to %d checked by their links only (anyone could have written them)", sv.ProvenTo, sv.ProvenTo+1, sv.LastSeq)
		}
		if len(s.Series) > 1 {
			p = fmt.Sprintf("series %d: %s", i+1, p)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ". ") + "."
}

// writeHeader says what the report rests on and what it covers.
func (s *Summary) writeHeader(w io.Writer) {
	parts := s.linksOnlyParts()
	switch {
	case !s.Verified:
		fmt.Fprintln(w, "NOT verified: see the warning")
	case s.linksOnly():
		fmt.Fprintln(w, "NOT verified, links only: no HMAC key was given and no checkpoint proves any record, and anyone can recompute the links of a rewritten log")
	case parts != "":
		// Security: not "verified": see verdict.
		fmt.Fprintln(w, "NOT verified throughout: "+parts)
	case len(s.Series) == 1:
		fmt.Fprintf(w, "verified: %s\n", s.Series[0].extent())
	default:
		fmt.Fprintf(w, "verified: %d series, one per chain, each on its own\n", len(s.Series))
	}
	for i, sv := range s.Series {
		switch {
		case !sv.OK():
			fmt.Fprintf(w, "series %d: BROKEN: %s (the chain held for %d records before it)\n", i+1, safe(sv.Problem.String()), sv.Records)
		case len(s.Series) > 1 || !s.Verified || parts != "":
			fmt.Fprintf(w, "series %d: %s\n", i+1, sv.extent())
		}
		for _, line := range sv.Basis {
			fmt.Fprintf(w, "  %s\n", line)
		}
		for _, n := range sv.Notes {
			fmt.Fprintf(w, "  note: %s\n", safe(n))
		}
	}
	if s.keyed() {
		fmt.Fprintf(w, "unverified: %d (records whose HMAC does not verify with the keys given: not counted)\n", s.Unverified)
	}
	if f := s.Filter.describe(); f != "" {
		fmt.Fprintf(w, "filter: %s\n", f)
	}
	fmt.Fprintln(w)
}

// extent says how much of a series was verified.
func (sv *Series) extent() string {
	return fmt.Sprintf("%d records in %d files, seq %d to %d", sv.Records, len(sv.Files), sv.FirstSeq, sv.LastSeq)
}

// keyed says the records' HMACs were checked.
func (s *Summary) keyed() bool { return len(s.Series) > 0 && s.Series[0].Keyed }

// pageWarner writes what it is given with a warning line before the first
// line that would run the lines since the last warning past every.
type pageWarner struct {
	w       io.Writer
	warning []byte // one line, with its newline
	every   int
	lines   int  // whole lines written since the last warning
	midLine bool // the last byte written was not a newline
}

func (p *pageWarner) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		if !p.midLine && p.lines >= p.every-1 {
			if err := p.warn(); err != nil {
				return written, err
			}
		}
		n := bytes.IndexByte(b, '\n') + 1
		if n == 0 {
			n = len(b)
		}
		if _, err := p.w.Write(b[:n]); err != nil {
			return written, err
		}
		written += n
		p.midLine = b[n-1] != '\n'
		if !p.midLine {
			p.lines++
		}
		b = b[n:]
	}
	return written, nil
}

// warn writes the warning on a line of its own.
func (p *pageWarner) warn() error {
	if p.midLine {
		if _, err := p.w.Write([]byte("\n")); err != nil {
			return err
		}
		p.midLine = false
	}
	p.lines = 0
	_, err := p.w.Write(p.warning)
	return err
}

// outcomes writes the outcomes counted, each quoted when it is not plain
// printable ASCII. Security: an outcome is porthole's own word only in a
// record whose HMAC was checked; a links-only or --unverified report may
// read one that a forger wrote, which could carry terminal escapes (found
// by the page's fuzz target).
func outcomes(m map[audit.Outcome]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", safe(k), m[audit.Outcome(k)]))
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
