package review

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// Summary answers "who asked what" over a set of records.
type Summary struct {
	// Verified says every series verified (VerifyWith) before it was
	// read. When one did not, Problem is the first break found, and the
	// counts may include records forged after it and miss records deleted.
	Verified bool     `json:"verified"`
	Problem  *Problem `json:"problem,omitempty"`
	// LinksOnly says that records counted were checked by their links
	// alone, which anyone who rewrites a log can recompute: with no HMAC
	// key, those of every series with no checkpoint (--links-only) or
	// after a series' latest checkpoint. Verified is true of them all the
	// same: it says the links held.
	LinksOnly bool `json:"linksOnly"`
	// Series are the files' chains, each verified on its own.
	Series []*Series `json:"series"`
	// Unverified counts the records read whose HMAC does not verify with
	// the keys given, or that name a key not given, whatever the filter.
	// They are counted nowhere else. Without an HMAC key nothing can be
	// checked, and it is 0.
	Unverified int    `json:"unverified"`
	Filter     Filter `json:"filter"`
	// DenialsLeftOut says the filter names a tool or arguments, which
	// denials do not have, so none is counted.
	DenialsLeftOut bool `json:"denialsLeftOut"`

	Records    int                 `json:"records"`
	From       time.Time           `json:"from"`
	To         time.Time           `json:"to"`
	Principals []*PrincipalSummary `json:"principals"` // busiest first
	Denials    []*DenialSummary    `json:"denials"`    // most frequent first

	// Detail is collected when ReportOptions.Detail asks for it, for the
	// page of WriteHTML.
	Detail *Detail `json:"-"`
}

// Series is what verifying one chain's files found, and, when it holds,
// what that rests on (Verification.Basis).
type Series struct {
	*Verification
	Basis []string `json:"basis,omitempty"`
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
	Tool     string                `json:"tool"`
	Calls    int                   `json:"calls"`
	Outcomes map[audit.Outcome]int `json:"outcomes"`
}

// DenialSummary counts denials of one reason from one address.
type DenialSummary struct {
	Outcome    audit.Outcome `json:"outcome"`
	Status     int           `json:"status,omitempty"`
	Reason     string        `json:"reason"`
	ClientAddr string        `json:"clientAddr"`
	Count      int           `json:"count"`
	LastSeen   time.Time     `json:"lastSeen"`
}

// ReportOptions say how Report verifies the files it reads.
type ReportOptions struct {
	VerifyOptions
	// Unverified reads files that do not verify instead of refusing them;
	// the summary says so (Verified false, and the Problem).
	Unverified bool
	// Detail collects Summary.Detail, keeping at most MaxRows rows
	// (DefaultMaxRows when 0).
	Detail  bool
	MaxRows int
}

// ErrNotVerified is Report's refusal of files that do not verify.
var ErrNotVerified = errors.New("the audit series does not verify")

// series verifies and counts one series: one at a time, and what is
// counted is what was verified, the same bytes in the same pass.
func (z *summarizer) series(group []*audit.LogFile, opts ReportOptions) error {
	files, problem, err := readChainOrder(pathsOf(group))
	if err != nil {
		return err
	}
	z.from, z.reading, z.open = opts.FromCheckpoint, false, map[callKey]openCall{}
	v, err := verifyFiles(files, problem, opts.VerifyOptions, z.line)
	if err != nil {
		return err
	}
	sv := &Series{Verification: v}
	if v.OK() {
		sv.Basis = v.Basis()
	} else if z.s.Problem == nil {
		z.s.Problem = v.Problem
	}
	z.s.Series = append(z.s.Series, sv)
	return nil
}

// Report verifies a log or a rotated series, or several (each replica
// writes a chain of its own, see splitSeries), with VerifyWith, and
// summarizes the records f admits. Files that do not verify are refused
// with ErrNotVerified, naming the first break, unless opts.Unverified. An
// error of another kind means a file could not be read, or FromCheckpoint
// was given with files of several chains.
//
// Security: verifying the series is not enough to count a record of a
// series read anyway. With an HMAC key, each record's HMAC is checked as it
// is read, on the bytes counted, past a break too, and one whose HMAC does
// not verify is counted only as Unverified: an edited principal is never
// counted as genuine. With FromCheckpoint, records before the record it
// names are not read, as nothing verified them.
func Report(paths []string, f Filter, opts ReportOptions) (*Summary, error) {
	series, err := splitSeries(paths)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		series = [][]*audit.LogFile{nil} // verifyFiles says it holds no record
	}
	if len(series) > 1 && opts.FromCheckpoint != 0 {
		return nil, fmt.Errorf("--from-checkpoint names a record of one chain, and the files hold %d chains: give one replica's files", len(series))
	}
	s := &Summary{Filter: f, DenialsLeftOut: f.namesCalls(), Principals: []*PrincipalSummary{}, Denials: []*DenialSummary{}}
	z := &summarizer{s: s, f: f, principals: map[string]*PrincipalSummary{}, tools: map[toolKey]*ToolSummary{},
		denials: map[string]*DenialSummary{}}
	if opts.Detail {
		z.detail = newDetailer(opts.MaxRows)
	}
	for _, group := range series {
		if err := z.series(group, opts); err != nil {
			return nil, err
		}
	}
	s.Verified = s.Problem == nil
	// Security: a script reading "verified" alone took a tail a forger
	// could have written for verified.
	for _, sv := range s.Series {
		s.LinksOnly = s.LinksOnly || sv.ReadByLinksOnly()
	}
	if !s.Verified && !opts.Unverified {
		return nil, fmt.Errorf("%w: %s", ErrNotVerified, s.Problem)
	}
	z.sort()
	if z.detail != nil {
		s.Detail = z.detail.done()
	}
	return s, nil
}

// summarizer counts records into a Summary, line by line.
type summarizer struct {
	s *Summary
	f Filter
	// from is where verification began (0: the genesis); reading says a
	// record at or after it was reached.
	from    uint64
	reading bool

	principals map[string]*PrincipalSummary
	// tools indexes each principal's tools: a client may name any tool,
	// and a scan of a principal's list for each call was quadratic in
	// them.
	tools   map[toolKey]*ToolSummary
	denials map[string]*DenialSummary
	// open are the calls counted whose result was not yet read.
	open map[callKey]openCall
	// detail, when asked for, collects Summary.Detail from the records
	// counted.
	detail *detailer
}

// callKey is how a result names its call: request ids are porthole's own
// and random, and a result carries its call's principal.
type callKey struct{ principal, requestID string }

type toolKey struct{ principal, tool string }

type openCall struct {
	principal *PrincipalSummary
	tool      *ToolSummary
	at        time.Time // the call's: where the timeline counts its outcome
	// row is the call's row while the page keeps it: nil without detail,
	// and once the row is left out (dropRow).
	row *Row
}

// line counts one line, as the walk verifying it checked it with the
// keys given (verifyFiles): a line is parsed and its HMAC checked once,
// and what is counted is what was checked. Lines that are not records are
// skipped: VerifyWith reports them.
func (z *summarizer) line(c *audit.CheckedLine) {
	e, err := c.Entry, c.Err
	if errors.Is(err, audit.ErrBadMAC) || errors.Is(err, audit.ErrNoKey) {
		// Its seq may be forged: it does not move where reading begins.
		if z.reading || e.Seq >= z.from {
			z.s.Unverified++
		}
		return
	}
	if err != nil {
		return
	}
	if !z.reading && e.Seq < z.from {
		return
	}
	z.reading = true
	e.Principal = unquote(e.Principal)
	switch e.Kind {
	case audit.KindCall:
		z.call(e)
	case audit.KindResult:
		z.result(e)
	case audit.KindDenial, audit.KindDenials:
		z.denial(e)
	}
}

func (z *summarizer) call(e audit.Entry) {
	key := callKey{e.Principal, e.RequestID}
	if !z.f.admitsCall(e) {
		delete(z.open, key) // a result of this request id is this call's
		return
	}
	z.count(e)
	ps := z.principals[e.Principal]
	if ps == nil {
		ps = &PrincipalSummary{Principal: e.Principal, FirstSeen: e.Time, LastSeen: e.Time}
		z.principals[e.Principal] = ps
	}
	ps.Calls++
	// The earliest and the latest, not the first and last read: the
	// series of several replicas are read one after the other, each in
	// its own order of time.
	if e.Time.Before(ps.FirstSeen) {
		ps.FirstSeen = e.Time
	}
	if e.Time.After(ps.LastSeen) {
		ps.LastSeen = e.Time
	}
	ts := z.tool(ps, toolName(e))
	ts.Calls++
	var row *Row
	if z.detail != nil {
		var left *Row
		row, left = z.detail.call(e, key)
		z.dropRow(left)
	}
	z.open[key] = openCall{ps, ts, e.Time, row}
}

// dropRow forgets the row of an open call that the page left out.
// Security: a row the page does not keep must not stay reachable from the
// calls still open (a call without a result stays open to the end), or
// what the report holds would grow with the calls, not with the rows kept.
func (z *summarizer) dropRow(left *Row) {
	if left == nil {
		return
	}
	if c, ok := z.open[left.call]; ok && c.row == left {
		c.row = nil
		z.open[left.call] = c
	}
}

// result counts a result when its call was counted, whatever its own time.
func (z *summarizer) result(e audit.Entry) {
	key := callKey{e.Principal, e.RequestID}
	c, ok := z.open[key]
	if !ok {
		return
	}
	delete(z.open, key)
	z.count(e)
	c.tool.Outcomes[e.Outcome]++
	if e.Outcome != audit.OutcomeOK {
		c.principal.Failed++
	}
	if z.detail != nil {
		z.detail.result(c.at, c.row, e)
	}
}

func (z *summarizer) denial(e audit.Entry) {
	if !z.f.admitsDenial(e) {
		return
	}
	z.count(e)
	if z.detail != nil {
		z.dropRow(z.detail.denial(e))
	}
	if e.Kind == audit.KindDenial {
		countDenials(z.denials, e.Outcome, e.Status, e.Reason, e.ClientAddr, 1, e.Time)
		return
	}
	// A summary's denials count as if each had its record.
	for _, g := range e.Groups {
		countDenials(z.denials, g.Outcome, g.Status, g.Reason, e.ClientAddr, g.Count, e.Last)
	}
}

// count adds a record to the summary's count and span.
func (z *summarizer) count(e audit.Entry) {
	s := z.s
	s.Records++
	if s.From.IsZero() || e.Time.Before(s.From) {
		s.From = e.Time
	}
	if e.Time.After(s.To) {
		s.To = e.Time
	}
}

// sort puts the principals, their tools and the denials in the summary,
// busiest first.
func (z *summarizer) sort() {
	s := z.s
	for _, ps := range z.principals {
		slices.SortFunc(ps.Tools, func(a, b *ToolSummary) int { return b.Calls - a.Calls })
		s.Principals = append(s.Principals, ps)
	}
	slices.SortFunc(s.Principals, func(a, b *PrincipalSummary) int {
		if a.Calls != b.Calls {
			return b.Calls - a.Calls
		}
		return strings.Compare(a.Principal, b.Principal)
	})
	for _, d := range z.denials {
		s.Denials = append(s.Denials, d)
	}
	slices.SortFunc(s.Denials, func(a, b *DenialSummary) int { return b.Count - a.Count })
}

// countDenials adds n denials of one outcome, status, reason and address,
// the last at last.
func countDenials(denials map[string]*DenialSummary, outcome audit.Outcome, status int, reason, addr string, n int, last time.Time) {
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
func toolName(e audit.Entry) string {
	if e.Tool == "" {
		return e.Method
	}
	return unquote(e.Tool)
}

// tool is ps's summary of tool, made when it is the first call of it.
func (z *summarizer) tool(ps *PrincipalSummary, tool string) *ToolSummary {
	k := toolKey{ps.Principal, tool}
	t := z.tools[k]
	if t == nil {
		t = &ToolSummary{Tool: tool, Outcomes: map[audit.Outcome]int{}}
		z.tools[k] = t
		ps.Tools = append(ps.Tools, t)
	}
	return t
}
