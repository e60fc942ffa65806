package review

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/porthole-dev/porthole/audit"
)

// Detail is what a page of the report (WriteHTML) shows beyond the counts
// of the Summary: the counted records over time, and the records
// themselves. It is collected from the same records in the same pass as the
// counts, so the two agree. It holds at most MaxTimelineBuckets buckets,
// each with a count per principal that called in it (so it grows with the
// principals, as the Summary's counts do), and at most MaxRows rows
// (DefaultMaxRows), each cut: its names to the caps of the record they
// came from, its arguments to rowArgsBytes.
type Detail struct {
	Timeline Timeline
	// Rows are the earliest records counted, by time, at most
	// ReportOptions.MaxRows of them: calls (with their result's outcome),
	// denials and denial summaries.
	Rows []*Row
	// RowsLeftOut counts the records counted but not in Rows.
	RowsLeftOut int
}

// DefaultMaxRows bounds the rows a page holds, and so its size: a
// reviewer narrows a larger trail with the filters.
const DefaultMaxRows = 10000

// Row is one record as a page shows it: names and values unquoted, values
// cut to a prefix (their length noted) so that no record can make a page
// large.
type Row struct {
	Time       time.Time
	Seq        uint64
	Kind       audit.Kind
	Principal  string
	ClientAddr string
	Transport  string
	Tool       string
	Args       []RowArg
	// ArgsNotShown counts the arguments the record holds past what a row
	// shows (rowArgsBytes), and those the record itself left out
	// (argsOmitted).
	ArgsNotShown int
	// Opened are, for a call that gave pseudonyms, the values they stood
	// for, from its result record, shown beside Args as Args are.
	Opened []RowArg
	// Outcome is a denial's, or a call's result's; "" while a call has no
	// result.
	Outcome    audit.Outcome
	Status     int
	Reason     string
	Count      int // the denials a denials summary stands for; 1 otherwise
	DurationMs float64

	call callKey // a call's, so that the summarizer can forget a row left out
}

// RowArg is one argument of a call, its value cut to rowValueBytes.
type RowArg struct {
	Name  string
	Value string
	// Bytes is the value's length as the record holds it; Recorded cut
	// says the record itself holds only a prefix of what was sent.
	Bytes       int
	RecordedCut bool
}

// Shown reports whether the row shows the value whole, as recorded.
func (a RowArg) Shown() bool { return len(a.Value) == a.Bytes }

const (
	// rowValueBytes is the most of one value a row shows.
	rowValueBytes = 256
	// rowArgsBytes is the most of a record's argument names and values a
	// row shows; past it, arguments are counted, not shown.
	rowArgsBytes = 1024
)

// The caps of a row's names. Porthole writes a principal and a tool at
// most MaxToolBytes, a reason at most MaxReasonBytes, an address of a few
// dozen bytes and an outcome of one word; a forged or --unverified line
// may hold any of them at up to the 16 MiB a line is read to.
const (
	rowAddrBytes    = audit.MaxToolBytes
	rowOutcomeBytes = 32
)

// cutName cuts a name at n bytes, as cutText does, saying so: a row and a
// table's cell show no more of any one name (a forged
// log's 64 KB names made a page of megabytes from twenty calls).
func cutName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (cut: %d bytes in all)", cutText(s, n), len(s))
}

// cutText cuts s at n bytes, on a UTF-8 boundary within the last
// character's bytes (as redact's runeCut does): in bytes that are no
// UTF-8, at n, rather than walking back to nothing.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// Timeline counts calls per principal and outcomes per bucket of Width,
// from Start.
type Timeline struct {
	Start   time.Time
	Width   time.Duration
	Buckets []Bucket // consecutive, earliest first
}

// Bucket is one interval of a Timeline.
type Bucket struct {
	Start time.Time
	// Calls counts the calls made in the interval, by principal.
	Calls map[string]int
	// Outcomes counts the outcomes of the calls made in the interval, and
	// the denials of the interval.
	Outcomes map[audit.Outcome]int
}

// MaxTimelineBuckets bounds a timeline: past it, buckets are widened.
const MaxTimelineBuckets = 96

// bucketWidths are the widths a timeline tries, narrowest first; each
// divides the next, so buckets merge whole. Past the last, widths double.
var bucketWidths = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, time.Minute, 5 * time.Minute,
	15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// timeline builds a Timeline from counts given in any order.
type timeline struct {
	width   time.Duration
	lo, hi  int64 // bucket numbers: Unix nanoseconds divided by width
	buckets map[int64]*Bucket
}

func newTimeline() *timeline {
	return &timeline{width: bucketWidths[0], buckets: map[int64]*Bucket{}}
}

func (tl *timeline) bucket(t time.Time) *Bucket {
	k := floorDiv(t.UnixNano(), int64(tl.width))
	if len(tl.buckets) == 0 {
		tl.lo, tl.hi = k, k
	}
	for min(tl.lo, k) <= max(tl.hi, k)-MaxTimelineBuckets {
		tl.widen()
		k = floorDiv(t.UnixNano(), int64(tl.width))
	}
	tl.lo, tl.hi = min(tl.lo, k), max(tl.hi, k)
	b := tl.buckets[k]
	if b == nil {
		b = &Bucket{Start: time.Unix(0, k*int64(tl.width)).UTC(), Calls: map[string]int{}, Outcomes: map[audit.Outcome]int{}}
		tl.buckets[k] = b
	}
	return b
}

// widen moves to the next width, merging buckets.
func (tl *timeline) widen() {
	next := tl.width * 2
	if i := slices.Index(bucketWidths, tl.width); i >= 0 && i+1 < len(bucketWidths) {
		next = bucketWidths[i+1]
	}
	merged := map[int64]*Bucket{}
	for k, b := range tl.buckets {
		nk := floorDiv(k*int64(tl.width), int64(next))
		m := merged[nk]
		if m == nil {
			m = &Bucket{Start: time.Unix(0, nk*int64(next)).UTC(), Calls: map[string]int{}, Outcomes: map[audit.Outcome]int{}}
			merged[nk] = m
		}
		for p, n := range b.Calls {
			m.Calls[p] += n
		}
		for o, n := range b.Outcomes {
			m.Outcomes[o] += n
		}
	}
	tl.lo = floorDiv(tl.lo*int64(tl.width), int64(next))
	tl.hi = floorDiv(tl.hi*int64(tl.width), int64(next))
	tl.width, tl.buckets = next, merged
}

// done lays the buckets out in order, empty ones included.
func (tl *timeline) done() Timeline {
	if len(tl.buckets) == 0 {
		return Timeline{Width: tl.width}
	}
	out := Timeline{Start: time.Unix(0, tl.lo*int64(tl.width)).UTC(), Width: tl.width}
	for k := tl.lo; k <= tl.hi; k++ {
		b := tl.buckets[k]
		if b == nil {
			b = &Bucket{Start: time.Unix(0, k*int64(tl.width)).UTC()}
		}
		out.Buckets = append(out.Buckets, *b)
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// rows keeps the earliest max rows: a heap whose top is the latest kept.
type rows struct {
	max     int
	kept    rowHeap
	leftOut int
}

type rowHeap []*Row

func (h rowHeap) Len() int      { return len(h) }
func (h rowHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h rowHeap) Less(i, j int) bool {
	return later(h[i], h[j])
}
func (h *rowHeap) Push(x any) { *h = append(*h, x.(*Row)) }
func (h *rowHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// later orders rows by time, then sequence number.
func later(a, b *Row) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.After(b.Time)
	}
	return a.Seq > b.Seq
}

// add keeps r if it is among the earliest max rows so far, and returns
// the row left out for it (r itself, or one kept before), or nil.
func (rs *rows) add(r *Row) (left *Row) {
	switch {
	case len(rs.kept) < rs.max:
		heap.Push(&rs.kept, r)
		return nil
	case rs.max > 0 && later(rs.kept[0], r):
		left = rs.kept[0]
		rs.kept[0] = r
		heap.Fix(&rs.kept, 0)
	default:
		left = r
	}
	rs.leftOut++
	return left
}

// leftOutAtOnce reports whether a row at (at, seq) would be left out as
// soon as it was added (the rows kept are max, all earlier), and if so
// counts it: the caller need not build it. Past the first max rows of a
// big trail, that is most records.
func (rs *rows) leftOutAtOnce(at time.Time, seq uint64) bool {
	probe := Row{Time: at, Seq: seq}
	if len(rs.kept) < rs.max || (rs.max > 0 && later(rs.kept[0], &probe)) {
		return false
	}
	rs.leftOut++
	return true
}

// done returns the rows kept, earliest first.
func (rs *rows) done() []*Row {
	out := []*Row(rs.kept)
	slices.SortFunc(out, func(a, b *Row) int {
		if later(a, b) {
			return 1
		}
		if later(b, a) {
			return -1
		}
		return 0
	})
	return out
}

// detailer collects a Detail beside the counts.
type detailer struct {
	tl   *timeline
	rows rows
}

func newDetailer(maxRows int) *detailer {
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	return &detailer{tl: newTimeline(), rows: rows{max: maxRows}}
}

// newRow is e's row, its names cut.
func newRow(e audit.Entry) *Row {
	return &Row{Time: e.Time, Seq: e.Seq, Kind: e.Kind, Principal: cutName(e.Principal, audit.MaxToolBytes), ClientAddr: cutName(e.ClientAddr, rowAddrBytes),
		Transport: cutName(e.Transport, rowOutcomeBytes), Outcome: audit.Outcome(cutName(string(e.Outcome), rowOutcomeBytes)), Status: e.Status,
		Reason: cutName(e.Reason, audit.MaxReasonBytes), Count: 1}
}

// call notes a counted call, key naming it. It returns the call's row, to
// take its result's outcome, unless the row was left out at once (nil);
// and the row left out for it, if any.
func (d *detailer) call(e audit.Entry, key callKey) (kept, left *Row) {
	d.tl.bucket(e.Time).Calls[e.Principal]++
	if d.rows.leftOutAtOnce(e.Time, e.Seq) {
		return nil, nil
	}
	r := newRow(e)
	r.Tool, r.ArgsNotShown, r.call = cutName(toolName(e), audit.MaxToolBytes), e.ArgsOmitted, key
	r.Outcome, r.Status, r.Reason = "", 0, "" // its result's, when it comes
	var notShown int
	r.Args, notShown = rowArgs(e.Args)
	r.ArgsNotShown += notShown
	if left = d.rows.add(r); left == r {
		return nil, nil
	}
	return r, left
}

// rowArgs are the arguments a row shows, and how many it does not: at most
// MaxArgs, as porthole writes them, and rowArgsBytes of their names and
// values; the rest are counted. Security: arguments with empty names and
// values cost no bytes, and a forged line of them would make one row of a
// million.
func rowArgs(args []audit.EntryArg) (shownArgs []RowArg, notShown int) {
	shown := 0
	for i, a := range args {
		if len(shownArgs) == audit.MaxArgs {
			return shownArgs, len(args) - i
		}
		name, value := unquote(a.Name), unquote(a.Value)
		if shown += len(name) + min(len(value), rowValueBytes); shown > rowArgsBytes {
			return shownArgs, len(args) - i
		}
		shownArgs = append(shownArgs, RowArg{Name: name, Value: cutText(value, rowValueBytes), Bytes: len(value), RecordedCut: a.Truncated})
	}
	return shownArgs, 0
}

// result counts a counted call's outcome at the call's time, at, and gives
// its row (nil when left out) the outcome, and what its pseudonyms stood
// for.
func (d *detailer) result(at time.Time, call *Row, e audit.Entry) {
	d.tl.bucket(at).Outcomes[e.Outcome]++
	if call != nil {
		call.Outcome, call.DurationMs = audit.Outcome(cutName(string(e.Outcome), rowOutcomeBytes)), e.DurationMs
		call.Opened, _ = rowArgs(e.Opened)
	}
}

// denial notes a counted denial or denials summary, and returns the row
// left out for it, if any.
func (d *detailer) denial(e audit.Entry) (left *Row) {
	// A summary is drawn at the time of its record, the time the filter
	// admitted it by, not at its last denial: drawn there, a summary
	// admitted by --until could stand past the range the page states.
	if e.Kind == audit.KindDenial {
		d.tl.bucket(e.Time).Outcomes[e.Outcome]++
	} else {
		for _, g := range e.Groups {
			d.tl.bucket(e.Time).Outcomes[g.Outcome] += g.Count
		}
	}
	if d.rows.leftOutAtOnce(e.Time, e.Seq) {
		return nil
	}
	r := newRow(e)
	if e.Kind != audit.KindDenial {
		var parts []string
		r.Count = 0
		for _, g := range e.Groups {
			r.Count += g.Count
			parts = append(parts, fmt.Sprintf("%d %s (%d): %s", g.Count, g.Outcome, g.Status, g.Reason))
		}
		r.Reason = cutName(strings.Join(parts, "; "), rowArgsBytes)
	}
	return d.rows.add(r)
}

func (d *detailer) done() *Detail {
	return &Detail{Timeline: d.tl.done(), Rows: d.rows.done(), RowsLeftOut: d.rows.leftOut}
}
